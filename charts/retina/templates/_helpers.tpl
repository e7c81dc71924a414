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

{{/* The agent's config.yaml for one OS: the shared keys, then the OS's own (which win), then metricsSecurity's. */}}
{{- define "retina.agentConfig" -}}
{{- $cfg := merge (deepCopy .os.config) (deepCopy .root.Values.config) -}}
{{- $cfg = mergeOverwrite $cfg (include "retina.metricsSecurityKeys" (dict "Values" .root.Values "dir" .tlsDir) | fromYaml) -}}
{{- $cfg = mergeOverwrite $cfg (include "retina.flowLogsOtlpKeys" (dict "Values" .root.Values "dir" .otlpTlsDir) | fromYaml) -}}
{{- if and .root.Values.flowLogs.otlp.endpoint (not ($cfg.flowLogs | default dict).enabled) -}}
{{- fail (printf "flowLogs.otlp.endpoint %q: the OTLP sink sends the ContainerNetworkLog exporter's records, so it needs config.flowLogs.enabled: true (docs/flow-logs.md)" .root.Values.flowLogs.otlp.endpoint) -}}
{{- end -}}
{{- if .root.Values.hubble.enabled -}}
{{- $h := dict "enabled" true "listenAddress" (printf ":%v" .root.Values.hubble.port) "maxFlows" .root.Values.hubble.maxFlows -}}
{{- if .root.Values.hubble.tls.enabled -}}
{{- $d := .hubbleTlsDir | default (include "retina.hubbleTlsDir" .root) -}}
{{- $_ := set $h "tls" (dict "enabled" true "certFile" (printf "%s/tls.crt" $d) "keyFile" (printf "%s/tls.key" $d) "clientCAFiles" (list (printf "%s/ca.crt" $d))) -}}
{{- end -}}
{{- $_ := set $cfg "hubble" (mergeOverwrite $h (deepCopy ($cfg.hubble | default dict))) -}}
{{- end -}}
{{- if .root.Values.hubble.metrics.enabled -}}
{{- $m := dict "enabled" .root.Values.hubble.metrics.enabled "listenAddress" (printf ":%v" .root.Values.hubble.metrics.port) -}}
{{- $h := deepCopy ($cfg.hubble | default dict) -}}
{{- $_ := set $h "metrics" (mergeOverwrite $m (deepCopy ($h.metrics | default dict))) -}}
{{- $_ := set $cfg "hubble" $h -}}
{{- end -}}
{{- $x := include "retina.hubbleExportKeys" . | fromYaml -}}
{{- if $x -}}
{{- $_ := set $cfg "hubble" (mergeOverwrite (deepCopy ($cfg.hubble | default dict)) (dict "export" $x)) -}}
{{- end -}}
{{- include "retina.configYaml" $cfg -}}
{{- end -}}

{{/* The top-level hubble.export values (Cilium's Helm layout) as the agent's hubble.export keys; the dynamic file is the mounted ConfigMap. */}}
{{- define "retina.hubbleExportKeys" -}}
{{- $e := .root.Values.hubble.export -}}
{{- $out := dict -}}
{{- if $e.static.enabled -}}
{{- $s := omit (deepCopy $e.static) "fieldAggregate" -}}
{{- if not $s.filePath -}}{{- $s = omit $s "filePath" -}}{{- end -}}
{{- $_ := set $out "static" $s -}}
{{- end -}}
{{- if $e.dynamic.enabled -}}
{{- $_ := set $out "dynamic" (dict "enabled" true "configFilePath" (ternary "flowlog-config/flowlogs.yaml" "/flowlog-config/flowlogs.yaml" (eq (.osName | default "linux") "windows"))) -}}
{{- end -}}
{{- if $out -}}{{- toYaml $out -}}{{- end -}}
{{- end -}}

{{- define "retina.flowlogConfigMap" -}}
{{- .Values.hubble.export.dynamic.config.configMapName | default (printf "%s-flowlog-config" (include "retina.fullname" .)) -}}
{{- end -}}

{{/*
The host directories the agent writes flow logs into (one per line): hubble.export.static's file,
config.flowLogs' file and each dynamic exporter's, with the agent's per-OS defaults.
*/}}
{{- define "retina.flowLogDirs" -}}
{{- $win := eq (.osName | default "linux") "windows" -}}
{{- $cfg := include "retina.agentConfig" . | fromYaml -}}
{{- $files := list -}}
{{- $static := (($cfg.hubble | default dict).export | default dict).static | default dict -}}
{{- if $static.enabled -}}
{{- $files = append $files ($static.filePath | default (ternary "C:\\k\\retina\\hubble\\events.log" "/var/run/retina/hubble/events.log" $win)) -}}
{{- end -}}
{{- $fl := $cfg.flowLogs | default dict -}}
{{- if $fl.enabled -}}
{{- $files = append $files ($fl.filePath | default (ternary "C:\\k\\retina\\flowlogs\\events.log" "/var/log/acns/hubble/events.log" $win)) -}}
{{- end -}}
{{- if .root.Values.hubble.export.dynamic.enabled -}}
{{- range .root.Values.hubble.export.dynamic.config.content -}}{{- $files = append $files .filePath -}}{{- end -}}
{{- end -}}
{{- $dirs := list -}}
{{- range $files -}}{{- $dirs = append $dirs (regexReplaceAll "[\\\\/][^\\\\/]*$" . "") -}}{{- end -}}
{{- join "\n" ($dirs | uniq) -}}
{{- end -}}

{{/* Hubble TLS (docs/hubble.md): where the agents mount their server certificate's Secret (Linux; the Windows agent's is relative), the Secrets' names, the cluster name in the certificates. */}}
{{- define "retina.hubbleTlsDir" -}}/retina/hubble-tls{{- end -}}
{{- define "retina.hubbleTlsDirWindows" -}}hubble-tls{{- end -}}
{{- define "retina.hubbleServerSecret" -}}
{{- .Values.hubble.tls.server.existingSecret | default (printf "%s-hubble-server-certs" (include "retina.fullname" .)) -}}
{{- end -}}
{{- define "retina.hubbleRelayClientSecret" -}}
{{- .Values.hubble.relay.tls.client.existingSecret | default (printf "%s-hubble-relay-client-certs" (include "retina.fullname" .)) -}}
{{- end -}}
{{- define "retina.hubbleClusterName" -}}
{{- ((.Values.config.hubble | default dict).clusterName | default "default") | replace "." "-" -}}
{{- end -}}

{{/* Where the metrics TLS Secret is mounted: Linux agent and operator; the Windows agent's is relative to its sandbox working directory. */}}
{{- define "retina.metricsTlsDir" -}}/retina/metrics-tls{{- end -}}
{{- define "retina.metricsTlsDirWindows" -}}metrics-tls{{- end -}}
{{- define "retina.metricsTlsSecret" -}}
{{- .Values.metricsSecurity.tls.secretName | default (printf "%s-metrics-tls" (include "retina.fullname" .)) -}}
{{- end -}}
{{- define "retina.metricsServerName" -}}
{{- .Values.metricsSecurity.tls.serverName | default (printf "%s.%s.svc" .Values.service.serviceName .Release.Namespace) -}}
{{- end -}}
{{/* The keys metricsSecurity adds to the agent's and the operator's config. */}}
{{- define "retina.metricsSecurityKeys" -}}
{{- $out := dict -}}
{{- if .Values.metricsSecurity.tls.enabled -}}
{{- $dir := .dir | default (include "retina.metricsTlsDir" .) -}}
{{- $_ := set $out "metricsTLS" (dict "certFile" (printf "%s/tls.crt" $dir) "keyFile" (printf "%s/tls.key" $dir)) -}}
{{- end -}}
{{- if .Values.metricsSecurity.auth.enabled -}}
{{- $_ := set $out "metricsAuth" (dict "enabled" true) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
The top-level flowLogs.otlp values as the agent's flowLogs.otlp keys: no credential, only the paths
of the mounted TLS Secret (the headers are the RETINA_FLOWLOGS_OTLP_HEADERS variable from their Secret).
*/}}
{{- define "retina.otlpTlsDir" -}}/retina/otlp-tls{{- end -}}
{{- define "retina.otlpTlsDirWindows" -}}otlp-tls{{- end -}}
{{- define "retina.flowLogsOtlpKeys" -}}
{{- $o := .Values.flowLogs.otlp -}}
{{- if $o.endpoint -}}
{{- $out := dict "endpoint" $o.endpoint "protocol" $o.protocol "compression" $o.compression -}}
{{- $tls := dict -}}
{{- if $o.tls.secretName -}}
{{- if not (hasPrefix "https://" $o.endpoint) -}}
{{- fail (printf "flowLogs.otlp.tls.secretName %q: the endpoint %q is not https:// (TLS needs https://)" $o.tls.secretName $o.endpoint) -}}
{{- end -}}
{{- $dir := .dir | default (include "retina.otlpTlsDir" .) -}}
{{- if $o.tls.ca -}}{{- $_ := set $tls "caFile" (printf "%s/ca.crt" $dir) -}}{{- end -}}
{{- if $o.tls.clientCertificate -}}
{{- $_ := set $tls "certFile" (printf "%s/tls.crt" $dir) -}}
{{- $_ := set $tls "keyFile" (printf "%s/tls.key" $dir) -}}
{{- end -}}
{{- else if $o.tls.clientCertificate -}}
{{- fail "flowLogs.otlp.tls.clientCertificate: needs flowLogs.otlp.tls.secretName (the Secret with tls.crt and tls.key)" -}}
{{- end -}}
{{- if $o.tls.serverName -}}{{- $_ := set $tls "serverName" $o.tls.serverName -}}{{- end -}}
{{- if $o.tls.insecureSkipVerify -}}{{- $_ := set $tls "insecureSkipVerify" true -}}{{- end -}}
{{- if $tls -}}{{- $_ := set $out "tls" $tls -}}{{- end -}}
{{- toYaml (dict "flowLogs" (dict "otlp" $out)) -}}
{{- end -}}
{{- end -}}

{{/* The agents' RETINA_FLOWLOGS_OTLP_HEADERS from flowLogs.otlp.headers' Secret (env entries, or nothing). */}}
{{- define "retina.flowLogsOtlpEnv" -}}
{{- $o := .Values.flowLogs.otlp -}}
{{- if and $o.endpoint $o.headers.secretName -}}
- name: RETINA_FLOWLOGS_OTLP_HEADERS
  valueFrom: {secretKeyRef: {name: {{ $o.headers.secretName | quote }}, key: {{ $o.headers.secretKey | quote }}}}
{{- end -}}
{{- end -}}

{{/* Whether the agents mount flowLogs.otlp.tls' Secret ("true" or ""). */}}
{{- define "retina.flowLogsOtlpTls" -}}
{{- if and .Values.flowLogs.otlp.endpoint .Values.flowLogs.otlp.tls.secretName -}}true{{- end -}}
{{- end -}}

{{- define "retina.operatorConfig" -}}
{{- $cfg := deepCopy .Values.operator.config -}}
{{- if not $cfg.leaderElectionNamespace -}}{{- $_ := set $cfg "leaderElectionNamespace" .Release.Namespace -}}{{- end -}}
{{- $_ := set $cfg "remoteContext" .Values.config.remoteContext -}}
{{- if and (not (hasKey $cfg "retinaEndpointSlices")) (hasKey .Values.config "retinaEndpointSlices") -}}{{- $_ := set $cfg "retinaEndpointSlices" .Values.config.retinaEndpointSlices -}}{{- end -}}
{{- if not $cfg.logLevel -}}{{- $_ := set $cfg "logLevel" .Values.config.logLevel -}}{{- end -}}
{{- $cfg = mergeOverwrite $cfg (include "retina.metricsSecurityKeys" (dict "Values" .Values) | fromYaml) -}}
{{- if not $cfg.captureImage -}}{{- $_ := set $cfg "captureImage" (printf "%s:%s" .Values.image.linux.repository (.Values.image.linux.tag | default .Chart.AppVersion)) -}}{{- end -}}
{{- if not $cfg.captureServiceAccountClusterRole -}}{{- $_ := set $cfg "captureServiceAccountClusterRole" (printf "%s-capture" (include "retina.fullname" .)) -}}{{- end -}}
{{- if not $cfg.captureWindowsImage -}}{{- $_ := set $cfg "captureWindowsImage" (printf "%s:%s" .Values.image.windows.repository (.Values.image.windows.tag | default .Chart.AppVersion)) -}}{{- end -}}
{{- include "retina.configYaml" $cfg -}}
{{- end -}}

{{/* A monitor endpoint's scheme, TLS and token under metricsSecurity (Prometheus' own ServiceAccount token). */}}
{{- define "retina.monitorSecurity" -}}
{{- if .Values.metricsSecurity.tls.enabled -}}
scheme: https
tlsConfig:
  ca: {secret: {name: {{ include "retina.metricsTlsSecret" . }}, key: ca.crt}}
  serverName: {{ include "retina.metricsServerName" . }}
{{- else -}}
scheme: http
{{- end }}
{{- if .Values.metricsSecurity.auth.enabled }}
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
{{- end }}
{{- end -}}

{{/*
Values this chart does not take: Microsoft Retina's chart keys (retina-keys.yaml, generated from
src/chart/retina-values.ts by `make chart-gen`; values.schema.json lets them through so that this
message, naming our key and the command that converts the file, is what helm shows), and the old
meaning of service.name (the Service's name, now service.serviceName).
*/}}
{{- define "retina.checkValues" -}}
{{- $v := .Values | toYaml | fromYaml -}}
{{- $found := list -}}
{{- range $k, $hint := (.Files.Get "retina-keys.yaml" | fromYaml) -}}
{{- $cur := $v -}}{{- $ok := true -}}
{{- range (splitList "." $k) -}}
{{- if and $ok (kindIs "map" $cur) (hasKey $cur .) -}}{{- $cur = index $cur . -}}{{- else -}}{{- $ok = false -}}{{- end -}}
{{- end -}}
{{- if $ok -}}{{- $found = append $found (printf "%s: %s" $k $hint) -}}{{- end -}}
{{- end -}}
{{- if $found -}}
{{- fail (printf "these are Microsoft Retina's chart values, not retina-ts': convert the file with `kubectl retina migrate-values -f <values file>` (docs/migrating-from-retina.md).\n  %s" (join "\n  " $found)) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .Values.service.name) | or (gt (len .Values.service.name) 15) -}}
{{- fail (printf "service.name %q: service.name is the Service port's name, as in Retina (at most 15 characters, e.g. retina); the Service's own name is service.serviceName (it was service.name before)" .Values.service.name) -}}
{{- end -}}
{{- end -}}
