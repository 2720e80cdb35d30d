// Package ipdrop keeps an emulated host's IP stack from routing the INA frames its agents read.
package ipdrop

import (
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Namespaces applies Namespace to every named namespace and returns the first error: on one kernel
// they fail alike, so a caller says it once.
func Namespaces(names []string) error {
	var first error
	for _, n := range names {
		if err := Namespace(n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Namespace adds, in the named network namespace (ip netns add), an nftables base chain at IPv4
// prerouting that drops every packet not arriving on lo.
//
// The agents read their frames from AF_PACKET rings, which get their copy before the IP stack
// sees the frame. An emulated host (a namespace whose eth0 has no address) would then look up a
// route for each frame, find none, allocate an error route and free it through RCU: about 4.5% of
// the machine's CPU in make bench's 4-worker job, while the bare path tool (ina-bench path), whose
// frames are not addressed to the interface, paid nothing of it. The chain ends each frame before
// the lookup. Such a namespace has no other IPv4 traffic from outside (its interfaces have no
// address), and its loopback keeps working for whatever runs inside. Never apply it to a namespace
// a real host uses. An error (a kernel without nf_tables) costs only speed: a caller may go on
// without the drop.
func Namespace(name string) error {
	ns, err := os.Open("/run/netns/" + name)
	if err != nil {
		return fmt.Errorf("ipdrop: namespace %s: %w", name, err)
	}
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		return fmt.Errorf("ipdrop: namespace %s: %w", name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "inapack"})
	accept := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: "drop", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRaw, Policy: &accept})
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: ifname("lo")},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("ipdrop: namespace %s: nftables: %w", name, err)
	}
	return nil
}

// ifname is an interface name as the kernel compares it: IFNAMSIZ bytes, zero-padded.
func ifname(n string) []byte {
	b := make([]byte, 16)
	copy(b, n)
	return b
}
