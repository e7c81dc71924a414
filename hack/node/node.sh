#!/usr/bin/env bash
# A real Kubernetes node on this machine (issue 23), beside the kwok harness (hack/k8s/harness.sh):
# etcd, kube-apiserver (bound to the node's bridge address, Node+RBAC authorization, ServiceAccount
# admission), controller-manager, scheduler, containerd + Debian's runc, the CNI bridge, kubelet and
# kube-proxy (nftables mode). One node per machine: its state is machine-wide (/run/retina-ts-node,
# /var/lib/retina-ts-node) and guarded by a lock directory, /run/retina-ts-node.lock.
#   node.sh up        clean what an earlier (killed) run left, then start everything; writes
#                     $ROOT/.cache/node/kubeconfig (admin) and waits for the node to be Ready
#   node.sh down      stop everything and restore the machine (sysctls, iptables chains, nft tables,
#                     mounts, kubepods cgroups, netns, the bridge, host dirs the node created)
#   node.sh clean     the restoring half of `down` alone (what `up` runs first)
#   node.sh import F  import an image archive (oci-archive or docker-archive) into containerd's k8s.io namespace
#   node.sh kill      SIGKILL every component by recorded pid and leave everything else as it is (what a
#                     killed test run leaves; tests use it, `up` cleans it)
#   node.sh state     what the node changes on the machine, one line each (tests compare it before/after)
#   node.sh status
# The lock: `up` takes it (mkdir) unless held by a live holder; RETINA_NODE_HOLDER_PID names the
# process that holds it (a test run), else it is held until `down`. A dead holder's lock is taken over.
# Environment: RETINA_NODE_ETCD_PORT (default RETINA_K8S_ETCD_PORT+2, peer +1), RETINA_NODE_API_PORT
# (default RETINA_K8S_API_PORT+2), RETINA_NODE_LOCK_WAIT (seconds to wait for the lock, default 0).
# Cluster DNS: CoreDNS (hack/node/coredns, an image of its static binary) as a Deployment in kube-system
# behind the kube-dns Service ($DNS_SVC_IP, kube-proxy), as a cluster has it; kubelet's clusterDNS names
# that Service. It answers cluster.local and the reverse zones from the API server (in-cluster config,
# its own ServiceAccount and ClusterRole) and NXDOMAIN for every other name: it forwards nothing, so no
# query leaves the machine. `up` returns once it is Ready.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ETCD_PORT=${RETINA_NODE_ETCD_PORT:-$(( ${RETINA_K8S_ETCD_PORT:-23379} + 2 ))}
API_PORT=${RETINA_NODE_API_PORT:-$(( ${RETINA_K8S_API_PORT:-26443} + 2 ))}
NODE_NAME=retina-node
BRIDGE=rtsnode0
NODE_IP=10.251.0.1
POD_CIDR=10.251.0.0/24
SVC_CIDR=10.252.0.0/24
# Dual stack: the node, its pods and Services have IPv6 addresses too (unique local, not the host's own prefix)
NODE_IP6=fd51:251::1
POD_CIDR6=fd51:251::/64
SVC_CIDR6=fd51:252::/112
API_SVC_IP=10.252.0.1
DNS_SVC_IP=10.252.0.10
RUN=/run/retina-ts-node
VAR=/var/lib/retina-ts-node
LOCK=/run/retina-ts-node.lock
PRE=/var/lib/retina-ts-node.pre-state
KUBECONFIG_OUT="$ROOT/.cache/node/kubeconfig"
KUBELET_ROOT=$VAR/kubelet
# Host paths kubelet, containerd and the CNI plugins write whatever their settings say (removed at
# teardown when they did not exist before; /run/netns is kept: the eBPF tests use it).
HOST_DIRS=(/var/lib/kubelet /var/log/pods /var/log/containers /usr/libexec/kubernetes /var/lib/cni /run/containerd /etc/cni /opt/cni /var/lib/containerd)
# kubelet rewrites these at every start; kube-proxy, the bridge plugin (ip_forward) and br_netfilter users more.
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes
  net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait
  net.ipv4.conf.default.forwarding net.ipv6.conf.default.forwarding)
# Writing net.ipv{4,6}.conf.all.forwarding (the bridge plugin's isGateway, for each family) rewrites every
# interface's own forwarding switch too: the host's own interfaces (those of its default routes, and lo)
# are recorded and restored after the "all" ones. Not every interface: other suites' veths come and go.
host_sysctls() {
  local i f
  for i in lo $( { ip -o route show default; ip -6 -o route show default; } 2>/dev/null | awk '{for (n = 1; n < NF; n++) if ($n == "dev") print $(n + 1)}' | sort -u); do
    case "$i" in *.*) continue ;; esac
    for f in ipv4 ipv6; do echo "net.$f.conf.$i.forwarding"; done
  done
}
log() { echo "[node $(date -u +%H:%M:%S)] $*" >&2; }
LOGS=$RUN/log
. "$ROOT/hack/k8s/procs.sh"

k8s_bin() { "$ROOT/hack/k8s/build.sh"; }
node_bin() { "$HERE/build.sh"; }
coredns_image() { "$HERE/build.sh" coredns-image; }

# ---- the lock ----
lock_holder() { cat "$LOCK/holder" 2>/dev/null || true; }
lock() {
  local waited=0 holder pid
  while ! mkdir "$LOCK" 2>/dev/null; do
    holder=$(lock_holder); pid=$(sed -n 's/^pid=//p' <<<"$holder")
    if [ -n "$pid" ] && [ "$pid" != 0 ] && ! kill -0 "$pid" 2>/dev/null; then
      log "taking over the lock of a dead holder ($holder)"; rm -rf "$LOCK"; continue
    fi
    if [ -z "$holder" ] && [ $(( $(date +%s) - $(stat -c %Y "$LOCK" 2>/dev/null || date +%s) )) -gt 10 ]; then rm -rf "$LOCK"; continue; fi
    if [ "$waited" -ge "${RETINA_NODE_LOCK_WAIT:-0}" ]; then
      echo "the real node of this machine is in use: $LOCK is held by ${holder:-?} (one real node per machine; 'hack/node/node.sh down' from that checkout frees it)" >&2
      exit 3
    fi
    sleep 1; waited=$((waited + 1))
  done
  printf 'pid=%s\nroot=%s\n' "${RETINA_NODE_HOLDER_PID:-0}" "$ROOT" > "$LOCK/holder"
}
unlock() { rm -rf "$LOCK"; }

# ---- what the node changes on the machine ----
sysctl_path() { echo "/proc/sys/${1//.//}"; }
save_pre_state() {
  [ -f "$PRE/.done" ] && return 0  # an earlier run was killed: its record of the machine still holds
  mkdir -p "$PRE"
  local s d
  : > "$PRE/sysctl"
  for s in "${SYSCTLS[@]}" $(host_sysctls); do [ -f "$(sysctl_path "$s")" ] && printf '%s=%s\n' "$s" "$(tr '\t' ' ' < "$(sysctl_path "$s")")" >> "$PRE/sysctl"; done
  : > "$PRE/dirs"
  for d in "${HOST_DIRS[@]}"; do [ -e "$d" ] && echo "$d" >> "$PRE/dirs"; done
  nft list tables 2>/dev/null | sort > "$PRE/nft-tables" || true
  touch "$PRE/.done"
}

# tracefs at /sys/kernel/tracing, as a systemd host mounts it at boot (sys-kernel-tracing.mount): the
# chart's agent and kubectl-retina bpftrace's pod read it from the host. Mounted here when the machine
# has it nowhere (a fresh VM without systemd), and unmounted again by clean.
host_tracefs() {
  mountpoint -q /sys/kernel/tracing && return 0
  mount -t tracefs tracefs /sys/kernel/tracing || { log "could not mount tracefs at /sys/kernel/tracing"; return 0; }
  touch "$PRE/tracefs-mounted"
  log "tracefs mounted at /sys/kernel/tracing (the machine had none; unmounted at down)"
}

restore_sysctls() {
  [ -f "$PRE/sysctl" ] || return 0
  local line
  while IFS= read -r line; do
    echo "${line#*=}" > "$(sysctl_path "${line%%=*}")" 2>/dev/null || log "could not restore ${line%%=*}"
  done < "$PRE/sysctl"
}

# iptables and ip6tables: the KUBE-* and CNI-* chains (kubelet's KUBE-FIREWALL, KUBE-KUBELET-CANARY,
# KUBE-IPTABLES-HINT; portmap's CNI-HOSTPORT-*) and every rule that jumps to them.
clean_iptables() {
  local ipt t rule chain
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for t in filter nat mangle raw; do
      $ipt -t $t -S >/dev/null 2>&1 || continue
      while IFS= read -r rule; do
        eval "$ipt -w -t $t -D ${rule#-A }" 2>/dev/null || true
      done < <($ipt -w -t $t -S | grep -E '^-A ' | grep -E -- '-[jg] (KUBE-|CNI-)' || true)
      for chain in $($ipt -w -t $t -S | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do $ipt -w -t $t -F "$chain" 2>/dev/null || true; done
      for chain in $($ipt -w -t $t -S | awk '/^-N (KUBE-|CNI-)/ {print $2}'); do $ipt -w -t $t -X "$chain" 2>/dev/null || true; done
    done
  done
}

# nft: kube-proxy's tables, and a table iptables-nft created for kubelet's chains when it did not exist
# before and holds no rule now.
clean_nft() {
  local fam name
  for fam in ip ip6 inet; do nft delete table $fam kube-proxy 2>/dev/null || true; done
  [ -f "$PRE/nft-tables" ] || return 0
  while read -r _ fam name; do
    grep -qx "table $fam $name" "$PRE/nft-tables" && continue
    case "$name" in filter|nat|mangle|raw|security) ;; *) continue ;; esac
    # any line that is not the table's or a chain's frame is a rule: then it is someone's, kept
    nft list table "$fam" "$name" 2>/dev/null | grep -qvE '^\s*(table |chain |type |policy |flags |comment |\}|$)' && continue
    nft delete table "$fam" "$name" 2>/dev/null || true
  done < <(nft list tables 2>/dev/null)
}

# Every container of ours (runc state under $RUN/runc), the shims, then the sandboxes' netns.
kill_containers() {
  local r id pid f
  for r in "$RUN"/runc/*/; do
    [ -d "$r" ] || continue
    for id in $(runc --root "$r" list -q 2>/dev/null); do runc --root "$r" kill -a "$id" KILL 2>/dev/null || true; done
    for id in $(runc --root "$r" list -q 2>/dev/null); do runc --root "$r" delete --force "$id" 2>/dev/null || true; done
  done
  for pid in $(our_shims); do kill -KILL "$pid" 2>/dev/null || true; done
}

# The shims our containerd started: they outlive it, and keep no pid file; each one's command line
# names our containerd's socket (-address $RUN/containerd.sock).
our_shims() {
  local p
  for p in /proc/[0-9]*; do
    { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q -- "containerd-shim-runc-v2 .*-address $RUN/containerd.sock" && echo "${p#/proc/}"
  done
  return 0
}

clean_mounts() { # everything mounted under our dirs, deepest first
  local m
  for m in $(awk -v a="$VAR" -v b="$RUN" '{ if (index($5, a) == 1 || index($5, b) == 1) print $5 }' /proc/self/mountinfo | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}

clean_cgroups() { # kubepods in every v1 hierarchy and in the unified one, depth first
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -d "${h}kubepods" ] || continue
    find "${h}kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "${h}kubepods" ] && log "cgroup ${h}kubepods still has tasks"
  done
  return 0
}

clean_net() {
  local ns
  # the sandboxes' network namespaces (containerd names them cni-<uuid>); their veths go with them
  for ns in $(ls /run/netns 2>/dev/null | grep -E '^cni-[0-9a-f-]+$' || true); do ip netns delete "$ns" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
  ip link del kube-ipvs0 2>/dev/null || true
}

clean() {
  local c
  for c in kube-proxy kubelet; do stop "$c"; done
  kill_containers
  stop containerd
  for c in kube-scheduler kube-controller-manager kube-apiserver; do stop "$c" & done
  wait
  stop etcd
  clean_mounts
  clean_cgroups
  clean_net
  clean_iptables
  clean_nft
  restore_sysctls
  if [ -f "$PRE/tracefs-mounted" ]; then
    umount /sys/kernel/tracing 2>/dev/null || umount -l /sys/kernel/tracing 2>/dev/null || log "could not unmount tracefs"
    rm -f "$PRE/tracefs-mounted"
  fi
  if [ -f "$PRE/dirs" ]; then
    for d in "${HOST_DIRS[@]}"; do grep -qx "$d" "$PRE/dirs" || rm -rf "$d"; done
  fi
  rm -rf "$RUN" "$VAR" "$KUBECONFIG_OUT"
}

state() {
  local s h t ipt
  for s in "${SYSCTLS[@]}" $(host_sysctls); do [ -f "$(sysctl_path "$s")" ] && echo "sysctl $s=$(tr '\t' ' ' < "$(sysctl_path "$s")")"; done
  ip -o link show "$BRIDGE" 2>/dev/null | awk '{sub(":$", "", $2); print "link " $2}' || true
  ip -o link show type veth 2>/dev/null | awk '{print $2}' | grep -E '^veth[0-9a-f]{8}@' | sed 's/^/veth /' || true
  ls /run/netns 2>/dev/null | grep -E '^cni-' | sed 's/^/netns /' || true
  for ipt in iptables ip6tables; do
    for t in filter nat mangle raw; do $ipt -w -t $t -S 2>/dev/null | grep -E 'KUBE-|CNI-' | sed "s/^/$ipt -t $t /" || true; done
  done
  nft list tables 2>/dev/null | grep -E ' (kube-proxy|filter|nat|mangle|raw|security)$' | sed 's/^/nft /' || true
  awk -v a="$VAR" -v b="$RUN" '{ if (index($5, a) == 1 || index($5, b) == 1) print "mount " $5 }' /proc/self/mountinfo
  for h in /sys/fs/cgroup/*/; do [ -d "${h}kubepods" ] && echo "cgroup ${h}kubepods"; done
  for d in "${HOST_DIRS[@]}" "$VAR" "$RUN"; do [ -e "$d" ] && echo "dir $d"; done
  for t in "$RUN"/*.pid; do [ -f "$t" ] && kill -0 "$(cat "$t")" 2>/dev/null && echo "process $(basename "$t" .pid)"; done
  [ -n "$(our_shims)" ] && echo "process containerd-shim-runc-v2"
  return 0
}

# ---- up ----
certs() {
  local d="$RUN/pki" n
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=retina-ts-node-ca" -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$d/apiserver.key" -out "$d/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:%s,IP:%s,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' "$NODE_IP" "$API_SVC_IP" > "$d/ext.cnf"
  openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 -extfile "$d/ext.cnf" -out "$d/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  : > "$d/tokens.csv"
  for n in admin node proxy; do head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$d/$n.token"; done
  {
    echo "$(cat "$d/admin.token"),admin,admin-uid,system:masters"
    echo "$(cat "$d/node.token"),system:node:$NODE_NAME,node-uid,system:nodes"
    echo "$(cat "$d/proxy.token"),system:kube-proxy,proxy-uid,system:node-proxier"
  } > "$d/tokens.csv"
}

kubeconfig() { # token-name, output
  cat > "$2" <<KC
apiVersion: v1
kind: Config
clusters:
- name: retina-node
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 < "$RUN/pki/ca.crt")
users:
- name: $1
  user:
    token: $(cat "$RUN/pki/$1.token")
contexts:
- name: retina-node
  context: {cluster: retina-node, user: $1}
current-context: retina-node
KC
}

api() { # method path [json]
  curl -sS --max-time 10 --fail-with-body --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $(cat "$RUN/pki/admin.token")" \
    -H 'Content-Type: application/json' -X "$1" "https://$NODE_IP:$API_PORT$2" ${3:+--data-binary "$3"}
}

bridge() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip -6 addr add "$NODE_IP6/64" dev "$BRIDGE" nodad
  ip link set "$BRIDGE" up
}

containerd_config() { # node bin dir
  local N=$1
  mkdir -p "$RUN/cni/net.d" "$VAR/containerd"
  cat > "$RUN/containerd.toml" <<TOML
version = 4
root = "$VAR/containerd"
state = "$RUN/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs", "io.containerd.mount-handler.v1.erofs"]
[plugins."io.containerd.server.v1.grpc"]
  address = "$RUN/containerd.sock"
[plugins."io.containerd.server.v1.ttrpc"]
  address = "$RUN/containerd.sock.ttrpc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "docker.io/retina-ts-node/pause:1"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$RUN/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "$RUN/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$N/cni"]
    conf_dir = "$RUN/cni/net.d"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
  # No registry: an image that is not imported is never pulled from the network. Every registry's
  # endpoint is a closed port on loopback, so a pull fails at once and nothing leaves the machine.
  mkdir -p "$RUN/certs.d/_default"
  printf 'server = "http://127.0.0.1:9"\n\n[host."http://127.0.0.1:9"]\n  capabilities = ["pull", "resolve"]\n' > "$RUN/certs.d/_default/hosts.toml"
  cat > "$RUN/cni/net.d/10-retina-node.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "retina-node",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$VAR/cni/networks", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}], [{"subnet": "$POD_CIDR6", "gateway": "$NODE_IP6"}]],
       "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

kubelet_config() {
  cat > "$RUN/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$RUN/containerd.sock
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
resolvConf: ""
clusterDNS: [$DNS_SVC_IP]
clusterDomain: cluster.local
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
volumePluginDir: $VAR/volume-plugins
serializeImagePulls: false
registerNode: true
YAML
  cat > "$RUN/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: $POD_CIDR,$POD_CIDR6
bindAddress: $NODE_IP
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
hostnameOverride: $NODE_NAME
clientConnection: {kubeconfig: $RUN/proxy.kubeconfig}
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

# The cluster DNS objects, as kubeadm's CoreDNS addon has them (trimmed): ServiceAccount, ClusterRole
# and binding (list/watch of what the kubernetes plugin reads), the Corefile ConfigMap, a one-replica
# Deployment of the imported image (readiness from CoreDNS's ready plugin), the kube-dns Service.
cluster_dns() { # image ref
  local corefile
  corefile='cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {\n  errors\n  ready :8181\n  health :8080\n  kubernetes cluster.local in-addr.arpa ip6.arpa {\n    pods insecure\n    ttl 5\n  }\n}\n.:53 {\n  errors\n  template ANY ANY {\n    rcode NXDOMAIN\n  }\n}\n'
  api POST /api/v1/namespaces/kube-system/serviceaccounts '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"coredns","namespace":"kube-system"}}' >/dev/null
  api POST /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"system:coredns"},"rules":[
    {"apiGroups":[""],"resources":["endpoints","services","pods","namespaces"],"verbs":["list","watch"]},
    {"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["list","watch"]}]}' >/dev/null
  api POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"system:coredns"},
    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:coredns"},"subjects":[{"kind":"ServiceAccount","name":"coredns","namespace":"kube-system"}]}' >/dev/null
  api POST /api/v1/namespaces/kube-system/configmaps "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"coredns\",\"namespace\":\"kube-system\"},\"data\":{\"Corefile\":\"$corefile\"}}" >/dev/null
  api POST /apis/apps/v1/namespaces/kube-system/deployments '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"coredns","namespace":"kube-system","labels":{"k8s-app":"kube-dns"}},
    "spec":{"replicas":1,"selector":{"matchLabels":{"k8s-app":"kube-dns"}},"template":{"metadata":{"labels":{"k8s-app":"kube-dns"}},"spec":{
      "serviceAccountName":"coredns","dnsPolicy":"Default","terminationGracePeriodSeconds":1,"priorityClassName":"system-cluster-critical",
      "containers":[{"name":"coredns","image":"'"$1"'","imagePullPolicy":"Never","args":["-conf","/etc/coredns/Corefile"],
        "ports":[{"name":"dns","containerPort":53,"protocol":"UDP"},{"name":"dns-tcp","containerPort":53,"protocol":"TCP"}],
        "readinessProbe":{"httpGet":{"path":"/ready","port":8181},"periodSeconds":1},
        "livenessProbe":{"httpGet":{"path":"/health","port":8080},"periodSeconds":10,"failureThreshold":5},
        "volumeMounts":[{"name":"config","mountPath":"/etc/coredns","readOnly":true}]}],
      "volumes":[{"name":"config","configMap":{"name":"coredns"}}]}}}}' >/dev/null
  api POST /api/v1/namespaces/kube-system/services '{"apiVersion":"v1","kind":"Service","metadata":{"name":"kube-dns","namespace":"kube-system","labels":{"k8s-app":"kube-dns"}},
    "spec":{"selector":{"k8s-app":"kube-dns"},"clusterIP":"'"$DNS_SVC_IP"'","ports":[{"name":"dns","port":53,"protocol":"UDP"},{"name":"dns-tcp","port":53,"protocol":"TCP"}]}}' >/dev/null
}
cluster_dns_ready() {
  api GET /apis/apps/v1/namespaces/kube-system/deployments/coredns | tr -d ' \n' | grep -q '"readyReplicas":1'
}

node_ready() {
  api GET "/api/v1/nodes/$NODE_NAME" | grep -q '"type": "Ready",[[:space:]]*"status": "True"' || \
    api GET "/api/v1/nodes/$NODE_NAME" | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

up() {
  local K N D t0
  t0=$(date +%s)
  K=$(k8s_bin); N=$(node_bin); D=$(coredns_image)
  lock
  log "cleaning what an earlier run left"
  clean
  save_pre_state
  host_tracefs
  mkdir -p "$RUN/log" "$VAR" "$(dirname "$KUBECONFIG_OUT")"
  certs
  kubeconfig admin "$RUN/admin.kubeconfig"; kubeconfig node "$RUN/node.kubeconfig"; kubeconfig proxy "$RUN/proxy.kubeconfig"
  bridge
  start etcd "$K/etcd" --name retina-node --data-dir "$VAR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "retina-node=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" --unsafe-no-fsync --log-level=warn
  wait_for etcd 30 curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
  start kube-apiserver "$K/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address="$NODE_IP" --advertise-address="$NODE_IP" \
    --secure-port="$API_PORT" --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
    --client-ca-file="$RUN/pki/ca.crt" --token-auth-file="$RUN/pki/tokens.csv" --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction --kubelet-preferred-address-types=InternalIP \
    --service-account-key-file="$RUN/pki/sa.pub" --service-account-signing-key-file="$RUN/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --api-audiences=https://kubernetes.default.svc \
    --service-cluster-ip-range="$SVC_CIDR,$SVC_CIDR6" --allow-privileged=true --profiling=false --cert-dir="$RUN/pki"
  wait_for kube-apiserver 90 curl -sf --max-time 2 --cacert "$RUN/pki/ca.crt" "https://$NODE_IP:$API_PORT/readyz"
  cp "$RUN/admin.kubeconfig" "$KUBECONFIG_OUT.tmp" && mv "$KUBECONFIG_OUT.tmp" "$KUBECONFIG_OUT"
  start kube-controller-manager "$K/kube-controller-manager" --kubeconfig="$RUN/admin.kubeconfig" --leader-elect=false --secure-port=0 \
    --controllers=serviceaccount-controller,serviceaccount-token-controller,namespace-controller,garbage-collector-controller,deployment-controller,replicaset-controller,daemonset-controller,job-controller,endpoints-controller,endpointslice-controller,endpointslice-mirroring-controller,root-ca-certificate-publisher-controller,node-lifecycle-controller,taint-eviction-controller,pod-garbage-collector-controller,ttl-controller,node-ipam-controller \
    --allocate-node-cidrs=true --cluster-cidr="$POD_CIDR,$POD_CIDR6" --node-cidr-mask-size-ipv4=24 --node-cidr-mask-size-ipv6=64 \
    --service-cluster-ip-range="$SVC_CIDR,$SVC_CIDR6" \
    --root-ca-file="$RUN/pki/ca.crt" --service-account-private-key-file="$RUN/pki/sa.key" --use-service-account-credentials=false
  start kube-scheduler "$K/kube-scheduler" --kubeconfig="$RUN/admin.kubeconfig" --leader-elect=false --secure-port=0 \
    --authentication-kubeconfig="$RUN/admin.kubeconfig" --authorization-kubeconfig="$RUN/admin.kubeconfig"
  containerd_config "$N"
  PATH="$N:$PATH" start containerd "$N/containerd" --config "$RUN/containerd.toml"
  wait_for containerd 30 "$N/ctr" --address "$RUN/containerd.sock" version
  import "$N/pause.oci.tar" >/dev/null
  kubelet_config
  start kubelet "$N/kubelet" --config="$RUN/kubelet.yaml" --kubeconfig="$RUN/node.kubeconfig" --root-dir="$KUBELET_ROOT" \
    --cert-dir="$RUN/kubelet-pki" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP,$NODE_IP6" --v=1
  start kube-proxy "$N/kube-proxy" --config="$RUN/kube-proxy.yaml"
  wait_for kubelet 120 node_ready
  # kube-proxy's healthz answers 200 once its first nftables sync is done: Services work from here on
  wait_for kube-proxy 60 curl -sf --max-time 2 http://127.0.0.1:10256/healthz
  # kubelet rewrote kernel.panic, panic_on_oops, overcommit, ... at its start: back to what they were
  restore_sysctls
  # the first pod (its CNI ADD turns forwarding on for both families, which Services need) after that
  cluster_dns "$(import "$D" | grep "^docker.io/retina-ts-node/coredns:" | head -1)"
  wait_for coredns 120 cluster_dns_ready
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
    alive "$c" || { log "$c exited; see $RUN/log/$c.log"; tail -30 "$RUN/log/$c.log" >&2; exit 1; }
  done
  log "ready in $(( $(date +%s) - t0 )) s: KUBECONFIG=$KUBECONFIG_OUT (node $NODE_NAME, $NODE_IP)"
}

# `down` and `clean` of a node that another live holder runs (another checkout's test) would pull it
# from under it: refused.
not_others() {
  local holder pid root
  holder=$(lock_holder); [ -n "$holder" ] || return 0
  pid=$(sed -n 's/^pid=//p' <<<"$holder"); root=$(sed -n 's/^root=//p' <<<"$holder")
  [ "$root" = "$ROOT" ] && return 0
  if [ -n "$pid" ] && [ "$pid" != 0 ] && ! kill -0 "$pid" 2>/dev/null; then return 0; fi
  echo "the real node of this machine belongs to $root (pid ${pid:-?}): not touching it" >&2
  exit 3
}

down() {
  not_others
  clean
  rm -rf "$PRE"
  unlock
  log "stopped; the machine is restored"
}

# ctr keeps an archive's short names as they are ("retina-ts:0.1.0"), while kubelet asks the CRI for
# the normalized one ("docker.io/library/retina-ts:0.1.0"): each short name gets its normalized tag.
# Prints the images containerd has.
import() {
  local N ref full ctr
  N=$(node_bin)
  ctr=("$N/ctr" --address "$RUN/containerd.sock" -n k8s.io)
  "${ctr[@]}" images import --all-platforms "$1" >/dev/null
  for ref in $("${ctr[@]}" images ls -q 2>/dev/null); do
    case "$ref" in
      sha256:*) continue ;;
      */*) case "${ref%%/*}" in *.*|*:*|localhost) continue ;; esac; full="docker.io/$ref" ;;
      *) full="docker.io/library/$ref" ;;
    esac
    "${ctr[@]}" images tag --force "$ref" "$full" >/dev/null 2>&1
  done
  "${ctr[@]}" images ls -q 2>/dev/null | grep -v '^sha256:'
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  clean) not_others; clean ;;
  import) import "$2" ;;
  state) state ;;
  kill) not_others; for c in kube-proxy kubelet containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do [ -f "$RUN/$c.pid" ] && kill -KILL "$(cat "$RUN/$c.pid")" 2>/dev/null || true; done ;;
  bin) node_bin ;;
  status) for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do printf '%-24s %s\n' "$c" "$(alive "$c" && echo running || echo stopped)"; done; echo "lock: $(lock_holder | tr '\n' ' ')" ;;
  *) echo "usage: $0 up|down|clean|import <archive>|state|status|bin" >&2; exit 2 ;;
esac
