// Command coredns is CoreDNS with only the plugins the local node uses: `kubernetes` answers
// the cluster's Service and pod names, `bind` keeps it on the node's bridge address, `ready`
// says when it has synced, `errors` logs what fails. No `forward`:
// a name outside the cluster is never sent anywhere, it is answered NXDOMAIN or SERVFAIL here.
// This is CoreDNS's documented way to build with a chosen set of plugins (an external main that
// sets the directives and imports the plugins), rather than its default build of them all.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order CoreDNS's own plugin.cfg gives these plugins.
var directives = []string{"bind", "ready", "errors", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
