package scheduler

import (
	"slices"

	"github.com/inapack/inapack/p4src/wire"
)

// The rules by which a placed job gets its switch job id, its aggregator slots and its priority on
// the switches. The scheduler service allocates with them, and so does the Kubernetes operator
// (kube/operator), so both modes treat the switches alike.

// MaxSwitchJob is the highest switch job id: jobs on the switches are 1..MaxSwitchJob.
const MaxSwitchJob = wire.MaxJobs - 1

// NextSwitchJob is the next switch job id after last (going round after MaxSwitchJob) that used
// says is free; 0 when none is. The ids go round rather than the lowest free one being taken
// again at once: packets of an ended job can still be on their way (held in a switch port's ring
// while a link was down, in a frozen switch), and a new job under the same id and sequence
// numbers would sum them into its results.
func NextSwitchJob(last int, used func(id int) bool) int {
	for i := 1; i <= MaxSwitchJob; i++ {
		id := (last+i-1)%MaxSwitchJob + 1
		if !used(id) {
			return id
		}
	}
	return 0
}

// SlotRange is a live job's aggregator slots (Window of them from Base) on the switches it uses.
type SlotRange struct {
	Switches     []string
	Base, Window int
}

// SlotBase picks a new job's slot range of window slots among a switch's activeSlots: the range
// overlapping least with the ranges of live jobs on any of the same switches, the lowest such
// base among equals (statistical sharing lets jobs overlap when slots run out).
func SlotBase(activeSlots, window int, switches []string, live []SlotRange) int {
	use := make([]int, activeSlots)
	for _, q := range live {
		if !slices.ContainsFunc(q.Switches, func(sw string) bool { return slices.Contains(switches, sw) }) {
			continue
		}
		for i := max(q.Base, 0); i < q.Base+q.Window && i < activeSlots; i++ {
			use[i]++
		}
	}
	best, bestLoad := 0, -1
	for b := 0; b+window <= activeSlots; b++ {
		load := 0
		for i := b; i < b+window; i++ {
			load += use[i]
		}
		if bestLoad < 0 || load < bestLoad {
			best, bestLoad = b, load
		}
	}
	return best
}

// PriorityCap maps a priority class and the policy's ESA priority to the switch's priority_cap:
// eight bands of 32 levels, the policy's 0..255 scaled into its class's band.
func PriorityCap(class int, policy uint8) int {
	return class*32 + (int(policy)*31+127)/255
}
