{{/* Names: every object is named after the release, so two releases never share a cluster-scoped name. */}}
{{- define "retina.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "retina.labels" -}}
app.kubernetes.io/name: retina
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: agent (both OSes), operator. */}}
{{- define "retina.selector" -}}
app.kubernetes.io/name: retina
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "retina.agentServiceAccount" -}}
{{- .Values.agent.serviceAccount.name | default (printf "%s-agent" (include "retina.fullname" .)) -}}
{{- end -}}

{{- define "retina.operatorServiceAccount" -}}
{{- .Values.operator.serviceAccount.name | default (printf "%s-operator" (include "retina.fullname" .)) -}}
{{- end -}}

{{/* image: repository:tag (tag defaults to the chart's appVersion) */}}
{{- define "retina.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion | toString) -}}
{{- end -}}

{{/* The agent's HTTP port, from the shared config. */}}
{{- define "retina.agentPort" -}}
{{- .Values.config.apiServer.port | int -}}
{{- end -}}

{{/* A config map with the keys whose value is null or an empty list left out (the agent's default applies). */}}
{{- define "retina.configYaml" -}}
{{- $out := dict -}}
{{- range $k, $v := . -}}
{{- if kindIs "map" $v -}}
{{- $sub := dict -}}
{{- range $k2, $v2 := $v -}}{{- if not (kindIs "invalid" $v2) -}}{{- $_ := set $sub $k2 $v2 -}}{{- end -}}{{- end -}}
{{- if $sub -}}{{- $_ := set $out $k $sub -}}{{- end -}}
{{- else if and (not (kindIs "invalid" $v)) (not (and (kindIs "slice" $v) (eq (len $v) 0))) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The agent's config.yaml for one OS: the shared keys, then the OS's own (which win). */}}
{{- define "retina.agentConfig" -}}
{{- $cfg := merge (deepCopy .os.config) (deepCopy .root.Values.config) -}}
{{- include "retina.configYaml" $cfg -}}
{{- end -}}

{{- define "retina.operatorConfig" -}}
{{- $cfg := deepCopy .Values.operator.config -}}
{{- if not $cfg.leaderElectionNamespace -}}{{- $_ := set $cfg "leaderElectionNamespace" .Release.Namespace -}}{{- end -}}
{{- $_ := set $cfg "remoteContext" .Values.config.remoteContext -}}
{{- if not $cfg.logLevel -}}{{- $_ := set $cfg "logLevel" .Values.config.logLevel -}}{{- end -}}
{{- if not $cfg.captureImage -}}{{- $_ := set $cfg "captureImage" (printf "%s:%s" .Values.image.linux.repository (.Values.image.linux.tag | default .Chart.AppVersion)) -}}{{- end -}}
{{- if not $cfg.captureServiceAccountClusterRole -}}{{- $_ := set $cfg "captureServiceAccountClusterRole" (printf "%s-capture" (include "retina.fullname" .)) -}}{{- end -}}
{{- if not $cfg.captureWindowsImage -}}{{- $_ := set $cfg "captureWindowsImage" (printf "%s:%s" .Values.image.windows.repository (.Values.image.windows.tag | default .Chart.AppVersion)) -}}{{- end -}}
{{- include "retina.configYaml" $cfg -}}
{{- end -}}
