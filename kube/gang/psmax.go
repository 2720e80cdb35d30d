package gang

// PSMaxGPUs is the gang's netpack.Job PSMaxGPUs: its smallest worker pod's GPUs. A node with no
// more of the gang's GPUs than that holds at most one of its worker pods, the only one that can
// reach a PS on its node, so NetPack places the PS where it will run (its INA decision and uplink
// estimate are for that node) rather than the plan moving it after. For a gang whose pods each
// take a whole node's share it binds nothing: NetPack places it as it places any job.
func (g *Gang) PSMaxGPUs() int {
	n := 0
	for _, w := range g.Workers {
		if k := PodGPUs(w); n == 0 || k < n {
			n = k
		}
	}
	return n
}
