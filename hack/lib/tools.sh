# Sourced by every tool build script (hack/*/build.sh): the one place that says where tools are built
# and how Go is run for them. A tool is built once from the Go module proxy into the tools cache outside
# the clone ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts; like Go's own caches, a fresh clone reuses
# it), at <cache>/<tool>/bin/<key>/, finished when <key>/.complete exists.
#   tools_dirs <tool> <key>   sets TOOLS, BIN (<tool>/bin/<key>), WORK (<tool>/build) and STAMP (BIN/.complete)
#   tools_go [flags]          puts Go on PATH and exports the build environment (module proxy, no VCS stamping, no
#                             cgo, -trimpath for every tool, so packages two tools share at one version compile once)
#   tools_log <tag> <msg>     a timestamped line on stderr
#   tools_timed <tag> <what> <command...>   runs the command between two log lines, the second with its wall time
tools_dirs() {
  TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
  BIN="$TOOLS/$1/bin/$2"
  WORK="$TOOLS/$1/build"
  STAMP="$BIN/.complete"
}
tools_go() {
  command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
  export GOFLAGS="-buildvcs=false -trimpath${1:+ $1}" GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
}
tools_log() { echo "[$1 $(date -u +%H:%M:%S)] ${*:2}" >&2; }
tools_timed() {
  local tag=$1 what=$2 t0=$SECONDS
  shift 2
  tools_log "$tag" "$what"
  "$@"
  tools_log "$tag" "$what: built in $((SECONDS - t0)) s"
}
