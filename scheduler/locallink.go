package scheduler

import (
	"fmt"
	"strings"
)

// LocalLink names the private veth pair, inside a host, between a job's PS and the worker on that
// host. id is unique among the host's live jobs (the service's job id, the operator's switch job
// id); the host's own namespace keeps the names apart from other hosts'.
func LocalLink(id int) (ps, worker string) {
	return fmt.Sprintf("inal%dp", id), fmt.Sprintf("inal%dw", id)
}

// AddLocalLink makes the private veth pair ps-worker on h, up, jumbo-sized and without IPv6 (the
// agents speak raw frames; IPv6 chatter would only wake them). A pair of that name left by a run
// that crashed is removed first.
func (h HostAccess) AddLocalLink(ps, worker string) error {
	_ = h.run("ip", "link", "del", ps)
	steps := [][]string{
		{"ip", "link", "add", ps, "type", "veth", "peer", "name", worker},
		{"ip", "link", "set", ps, "mtu", "9500"}, {"ip", "link", "set", worker, "mtu", "9500"},
		{"sysctl", "-qw", "net.ipv6.conf." + ps + ".disable_ipv6=1"},
		{"sysctl", "-qw", "net.ipv6.conf." + worker + ".disable_ipv6=1"},
		{"ip", "link", "set", ps, "up"}, {"ip", "link", "set", worker, "up"},
	}
	for _, st := range steps {
		if err := h.run(st...); err != nil {
			return fmt.Errorf("the link between the PS and the local worker: %w", err)
		}
	}
	return nil
}

// DelLocalLink removes the pair whose PS end is ps (its peer goes with it). A pair already gone
// (never made, or the host's namespace is gone and the link with it) is no error.
func (h HostAccess) DelLocalLink(ps string) error {
	err := h.run("ip", "link", "del", ps)
	if err != nil && !strings.Contains(err.Error(), "Cannot find device") && !strings.Contains(err.Error(), "Cannot open network namespace") {
		return err
	}
	return nil
}
