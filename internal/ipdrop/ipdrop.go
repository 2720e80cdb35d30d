// Package ipdrop keeps an emulated host's kernel from taking in the INA frames its agents read.
package ipdrop

import (
	"fmt"
	"os"

	"github.com/google/nftables"
)

// Namespaces applies Namespace to the device dev of every named namespace and returns the first
// error: on one kernel they fail alike, so a caller says it once.
func Namespaces(names []string, dev string) error {
	var first error
	for _, n := range names {
		if err := Namespace(n, dev); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Namespace adds, in the named network namespace (ip netns add), an nftables netdev base chain
// at the ingress of device dev whose policy drops every frame.
//
// The agents read their frames from AF_PACKET rings bound to every protocol, which get their copy
// before the device's ingress hook (transport.OpenPacket). Without the drop, an emulated host (a
// namespace whose eth0 has no address) hands each frame on to its IP stack too: the stack clones
// the shared buffer, pulls the headers into a copy of its own, looks up a route, finds none,
// allocates an error route and frees it through RCU. In make bench's 4-worker job that cost about
// 4.5% of the machine's CPU (the route alone); an IPv4 prerouting drop still left the clone, the
// copy and the hook, 3-4% more. The bare path tool (ina-bench path), whose frames are not
// addressed to the interface, pays a few instructions per frame instead. Such a device carries
// nothing else the host needs (it has no address); the namespace's loopback and any other device
// are untouched. Never apply it to a device a real host uses. An error (a kernel without
// nf_tables, no such device) costs only speed: a caller may go on without the drop.
func Namespace(name, dev string) error {
	ns, err := os.Open("/run/netns/" + name)
	if err != nil {
		return fmt.Errorf("ipdrop: namespace %s: %w", name, err)
	}
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return fmt.Errorf("ipdrop: namespace %s: %w", name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyNetdev, Name: "inapack"})
	drop := nftables.ChainPolicyDrop
	c.AddChain(&nftables.Chain{Name: "ingress-" + dev, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookIngress, Priority: nftables.ChainPriorityFilter, Device: dev, Policy: &drop})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("ipdrop: namespace %s, device %s: nftables: %w", name, dev, err)
	}
	return nil
}
