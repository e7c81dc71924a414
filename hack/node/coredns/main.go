// CoreDNS for the real node's cluster DNS (hack/node/node.sh): coredns.go of CoreDNS with only the
// plugins the node's Corefile uses compiled in (not core/plugin's every plugin, which pulls every
// cloud SDK into the build), in CoreDNS's own directive order.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "kubernetes", "template"}
}

func main() { coremain.Run() }
