// Command coredns is CoreDNS with the plugins a cluster's DNS needs and no
// others: the real node's cluster DNS (hack/real-node.sh, kube-dns at
// 10.96.0.10), so that pods reach Services by name as on any cluster
// (OLM's catalog-operator dials a CatalogSource's registry Service by its
// DNS name). CoreDNS's own main links every plugin (cloud DNS providers
// among them); this is its documented way to build a smaller one: the
// plugins imported here, in the order of dnsserver.Directives. No
// forward plugin: nothing off this machine is reachable, so a name outside
// the cluster's zones is not answered.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	// The order CoreDNS's plugin.cfg gives these plugins.
	dnsserver.Directives = []string{"ready", "health", "errors", "log", "cache", "kubernetes"}
	coremain.Run()
}
