#!/usr/bin/env bash
# A real control plane on loopback for integration tests and demos: etcd, kube-apiserver,
# kube-controller-manager (GC, Deployments, ReplicaSets, DaemonSets, Jobs, namespaces), kube-scheduler and kwok
# (fake nodes that run the scheduled pods and give them IPs). No mocks.
#   harness.sh up                  build if needed, start everything, write .cache/k8s/kubeconfig
#   harness.sh down                stop what `up` started (by recorded pid) and wipe the state
#   harness.sh restart-apiserver   stop and start kube-apiserver only (same flags, same etcd)
#   harness.sh stop-apiserver | start-apiserver
#   harness.sh kill <component>    SIGKILL one component by recorded pid (chaos tests: no graceful stop)
#   harness.sh start-etcd          start etcd again (same data dir and ports) after a kill
#   harness.sh status
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/versions.sh"
. "$HERE/procs.sh"
K8S_DIR="$ROOT/.cache/k8s"
RUN="$K8S_DIR/run"
KUBECONFIG_OUT="$K8S_DIR/kubeconfig"
# Below Linux's ephemeral range (ip_local_port_range, 32768-60999 by default): a port in it can be
# taken at any moment by some test's outgoing connection, and then a component cannot bind it (a CI
# rehearsal lost kwok that way: 127.0.0.1:36444 "address already in use", and every test after it
# that needed kwok's pods failed). etcd's peer port is ETCD_PORT+1, kwok's API_PORT+1.
ETCD_PORT=${RETINA_K8S_ETCD_PORT:-23379}
API_PORT=${RETINA_K8S_API_PORT:-26443}
NODES=${RETINA_K8S_NODES:-10}
# kwok's kubelet-like server (pods/exec, logs): a fixed port so nodes can advertise it.
KWOK_PORT=${RETINA_K8S_KWOK_PORT:-$((API_PORT + 1))}
# More kube-apiserver flags, split on spaces (a benchmark's audit log: --audit-policy-file=... --audit-log-path=...).
APISERVER_FLAGS=${RETINA_K8S_APISERVER_FLAGS:-}
log() { echo "[k8s $(date -u +%H:%M:%S)] $*" >&2; }

bin_dir() { "$HERE/build.sh"; }

kill9() { # name: SIGKILL the recorded pid, wait until it is gone
  local name=$1 pid
  [ -f "$RUN/$name.pid" ] || { log "$name has no recorded pid"; return 1; }
  pid=$(cat "$RUN/$name.pid")
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  rm -f "$RUN/$name.pid"
}

certs() {
  local d="$RUN/pki"
  [ -f "$d/.done" ] && return 0
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=retina-ts-test-ca" -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout "$d/apiserver.key" -out "$d/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' > "$d/ext.cnf"
  openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 -extfile "$d/ext.cnf" -out "$d/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$d/token"
  echo "$(cat "$d/token"),admin,admin-uid,system:masters" > "$d/tokens.csv"
  touch "$d/.done"
}

write_kubeconfig() {
  local d="$RUN/pki"
  cat > "$KUBECONFIG_OUT.tmp" <<KC
apiVersion: v1
kind: Config
clusters:
- name: retina-test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 < "$d/ca.crt")
users:
- name: admin
  user:
    token: $(cat "$d/token")
contexts:
- name: retina-test
  context: {cluster: retina-test, user: admin}
current-context: retina-test
KC
  mv "$KUBECONFIG_OUT.tmp" "$KUBECONFIG_OUT"
}

api() { # method path [json]
  curl -sS --fail-with-body --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $(cat "$RUN/pki/token")" \
    -H 'Content-Type: application/json' -X "$1" "https://127.0.0.1:$API_PORT$2" ${3:+--data-binary "$3"}
}

start_apiserver() {
  local B; B=$(bin_dir)
  start kube-apiserver "$B/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$API_PORT" --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
    --client-ca-file="$RUN/pki/ca.crt" --token-auth-file="$RUN/pki/tokens.csv" --authorization-mode=RBAC \
    --service-account-key-file="$RUN/pki/sa.pub" --service-account-signing-key-file="$RUN/pki/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc --api-audiences=https://kubernetes.default.svc \
    --service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112 --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --allow-privileged=true --profiling=false --enable-priority-and-fairness=false \
    --max-requests-inflight=2000 --max-mutating-requests-inflight=1000 --cert-dir="$RUN/pki" $APISERVER_FLAGS
  wait_for kube-apiserver 90 curl -sf --cacert "$RUN/pki/ca.crt" "https://127.0.0.1:$API_PORT/readyz"
}

# Node i's addresses and pod CIDR: the first 246 nodes keep 172.18.0.(i+10), fd00:18::(i+10) and 10.244.i.0/24 (the
# tests name kwok-node-0's); beyond, 172.18.x.y, fd00:18::1:hex and 10.(128 + i/256).(i%256).0/24, valid to 32 767
# nodes (RETINA_K8S_NODES: 172.18.0.$((i + 10)) was no address past node 245, 10.244.$i.0 none past node 255).
node_ip4() { local n=$(($1 + 10)); echo "172.18.$((n / 256)).$((n % 256))"; }
node_ip6() { if [ "$1" -lt 246 ]; then echo "fd00:18::$(($1 + 10))"; else printf 'fd00:18::1:%x\n' "$1"; fi; }
node_cidr() { if [ "$1" -lt 256 ]; then echo "10.244.$1.0/24"; else echo "10.$((128 + $1 / 256)).$(($1 % 256)).0/24"; fi; }

create_nodes() {
  local i ip4 ip6 cidr
  for i in $(seq 0 $((NODES - 1))); do
    api GET "/api/v1/nodes/kwok-node-$i" >/dev/null 2>&1 && continue
    ip4=$(node_ip4 "$i") ip6=$(node_ip6 "$i") cidr=$(node_cidr "$i")
    api POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"kwok-node-$i\",
      \"annotations\":{\"kwok.x-k8s.io/node\":\"fake\",\"node.alpha.kubernetes.io/ttl\":\"0\"},
      \"labels\":{\"type\":\"kwok\",\"kubernetes.io/hostname\":\"kwok-node-$i\",\"topology.kubernetes.io/zone\":\"zone-$((i % 3))\"}},
      \"spec\":{\"podCIDR\":\"$cidr\",\"podCIDRs\":[\"$cidr\"]},
      \"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$ip4\"},{\"type\":\"ExternalIP\",\"address\":\"$ip6\"},{\"type\":\"Hostname\",\"address\":\"kwok-node-$i\"}],
      \"allocatable\":{\"cpu\":\"1000\",\"memory\":\"1Ti\",\"pods\":\"1000\"},\"capacity\":{\"cpu\":\"1000\",\"memory\":\"1Ti\",\"pods\":\"1000\"}}}" >/dev/null
  done
}

start_etcd() {
  local B; B=$(bin_dir)
  start etcd "$B/etcd" --name retina-test --data-dir "$RUN/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "retina-test=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" \
    --quota-backend-bytes=4294967296 --unsafe-no-fsync --log-level=warn
  wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

up() {
  local B; B=$(bin_dir)
  mkdir -p "$RUN"
  certs
  start_etcd
  start_apiserver
  write_kubeconfig
  start kube-controller-manager "$B/kube-controller-manager" --kubeconfig="$KUBECONFIG_OUT" --leader-elect=false \
    --controllers=serviceaccount,namespace,garbagecollector,deployment,replicaset,daemonset,job --secure-port=0 \
    --concurrent-deployment-syncs=10 --concurrent-replicaset-syncs=10 --concurrent-gc-syncs=40 \
    --kube-api-qps=1000 --kube-api-burst=2000
  start kube-scheduler "$B/kube-scheduler" --kubeconfig="$KUBECONFIG_OUT" --leader-elect=false --secure-port=0 \
    --authentication-kubeconfig="$KUBECONFIG_OUT" --authorization-kubeconfig="$KUBECONFIG_OUT" \
    --kube-api-qps=1000 --kube-api-burst=2000
  # pods/exec runs the command on this machine, in $RUN/exec-root (a test fills it with the files a
  # pod would see, paths relative to the container's /); nodes advertise kwok's server port, and a
  # node whose only address is InternalIP 127.0.0.1 can be reached by the API server for exec.
  mkdir -p "$RUN/exec-root"
  cat > "$RUN/kwok.yaml" <<KWOK
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: retina-test-local-exec
spec:
  execs:
  - local:
      workDir: $RUN/exec-root
KWOK
  start kwok "$B/kwok" --config="$RUN/kwok.yaml" --kubeconfig="$KUBECONFIG_OUT" --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --cidr=10.250.0.1/16 \
    --node-ip=172.18.0.2 --node-lease-duration-seconds=40 --server-address="127.0.0.1:$KWOK_PORT" --node-port="$KWOK_PORT"
  create_nodes
  for f in "$ROOT"/charts/retina/crds/*.yaml; do
    [ -f "$f" ] || continue
    # the API server accepts YAML bodies: apply = create, or replace with the current resourceVersion
    local name; name=$(awk '/^metadata:/{m=1} m&&/^  name:/{print $2; exit}' "$f")
    if api GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$name" >/dev/null 2>&1; then
      curl -sS --fail-with-body --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $(cat "$RUN/pki/token")" \
        -H 'Content-Type: application/apply-patch+yaml' -X PATCH --data-binary @"$f" \
        "https://127.0.0.1:$API_PORT/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$name?fieldManager=retina-harness&force=true" >/dev/null
    else
      curl -sS --fail-with-body --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer $(cat "$RUN/pki/token")" \
        -H 'Content-Type: application/yaml' -X POST --data-binary @"$f" \
        "https://127.0.0.1:$API_PORT/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
    fi
  done
  for name in $(ls "$ROOT"/charts/retina/crds/*.yaml 2>/dev/null | xargs -r -n1 awk '/^metadata:/{m=1} m&&/^  name:/{print $2; exit}'); do
    wait_for kube-apiserver 30 sh -c "curl -sf --cacert '$RUN/pki/ca.crt' -H 'Authorization: Bearer $(cat "$RUN/pki/token")' \
      https://127.0.0.1:$API_PORT/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$name | grep -q '\"Established\"'"
  done
  # Established is not enough: wait until each custom resource's storage serves a LIST (no 429).
  for plural in retinaendpoints metricsconfigurations captures; do
    [ -f "$ROOT/charts/retina/crds/retina.sh_$plural.yaml" ] || continue
    wait_for kube-apiserver 30 api GET "/apis/retina.sh/v1alpha1/$plural?limit=1"
  done
  if [ -f "$ROOT/charts/retina/crds/acn.azure.com_containernetworklogs.yaml" ]; then
    wait_for kube-apiserver 30 api GET "/apis/acn.azure.com/v1alpha1/containernetworklogs?limit=1"
  fi
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
    alive "$c" || { log "$c exited; see $RUN/$c.log"; tail -20 "$RUN/$c.log" >&2; exit 1; }
  done
  log "ready: KUBECONFIG=$KUBECONFIG_OUT ($NODES kwok nodes)"
}

down() {
  # the API clients and the API server together, then etcd
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver; do stop "$c" & done
  wait
  stop etcd
  rm -rf "$RUN" "$KUBECONFIG_OUT"
  log "stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  build) bin_dir ;;
  stop-apiserver) stop kube-apiserver ;;
  start-apiserver) start_apiserver ;;
  restart-apiserver) stop kube-apiserver; start_apiserver ;;
  kill) case "${2:-}" in etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok) kill9 "$2" ;; *) echo "usage: $0 kill etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok" >&2; exit 2 ;; esac ;;
  start-etcd) start_etcd ;;
  status) for c in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do printf '%-24s %s\n' "$c" "$(alive "$c" && echo running || echo stopped)"; done ;;
  *) echo "usage: $0 up|down|build|restart-apiserver|stop-apiserver|start-apiserver|kill <component>|start-etcd|status" >&2; exit 2 ;;
esac
