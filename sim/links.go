package sim

import (
	"fmt"

	"github.com/inapack/inapack/netpack"
)

// SetLinks overrides a cluster's NIC speed (Gbit/s) and ToR oversubscription (rack NICs :
// uplink); 0 keeps what the cluster has. The core stays non-blocking over the new uplinks.
func SetLinks(c *netpack.Cluster, nicGbps, oversub float64) error {
	if nicGbps == 0 && oversub == 0 {
		return nil
	}
	if nicGbps < 0 || oversub < 0 {
		return fmt.Errorf("NIC speed (%v) and oversubscription (%v) must be positive", nicGbps, oversub)
	}
	c.CoreGbps = 0
	for r := range c.Racks {
		rk := &c.Racks[r]
		var sum float64
		for m := rk.First; m < rk.First+netpack.MachineID(rk.Count); m++ {
			if nicGbps > 0 {
				c.Machines[m].NICGbps = nicGbps
			}
			sum += c.Machines[m].NICGbps
		}
		if oversub > 0 {
			rk.UplinkGbps = sum / oversub
		}
		c.CoreGbps += rk.UplinkGbps
	}
	c.Name = fmt.Sprintf("%s-nic%g-os%g", c.Name, nicGbps, oversub)
	return c.Validate()
}
