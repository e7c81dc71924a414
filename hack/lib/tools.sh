# Sourced by every tool build script (hack/*/build.sh): the one place that says where tools are built
# and how Go is run for them. A tool is built once from the Go module proxy into the tools cache outside
# the clone ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts; like Go's own caches, a fresh clone reuses
# it), at <cache>/<tool>/bin/<key>/, finished when <key>/.complete exists.
#   tools_dirs <tool> <key>   sets TOOLS, BIN (<tool>/bin/<key>), WORK (<tool>/build) and STAMP (BIN/.complete)
#   tools_go                  puts Go on PATH and exports the build environment (module proxy, no VCS stamping, no cgo)
#   tools_log <tag> <msg>     a timestamped line on stderr
tools_dirs() {
  TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
  BIN="$TOOLS/$1/bin/$2"
  WORK="$TOOLS/$1/build"
  STAMP="$BIN/.complete"
}
tools_go() {
  command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
  export GOFLAGS="-buildvcs=false${1:+ $1}" GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
}
tools_log() { echo "[$1 $(date -u +%H:%M:%S)] ${*:2}" >&2; }
