// The pod sandbox's stand-in for registry.k8s.io/pause (no registry here): a static binary that
// waits for SIGTERM or SIGINT and exits 0. hack/node/build.sh packs it as an OCI archive.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
