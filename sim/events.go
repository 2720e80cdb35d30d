package sim

// before orders completions: earlier first, then earlier start.
func (r *running) before(o *running) bool {
	if r.finish != o.finish {
		return r.finish < o.finish
	}
	return r.seq < o.seq
}

// localHeap is a min-heap of local jobs by predicted completion.
type localHeap []*running

func (h localHeap) Len() int           { return len(h) }
func (h localHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h localHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *localHeap) Push(x any) {
	r := x.(*running)
	r.heapIdx = len(*h)
	*h = append(*h, r)
}
func (h *localHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
