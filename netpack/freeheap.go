package netpack

import "container/heap"

// freeHeap orders machines by free GPUs not yet taken (most first, then lowest id).
type freeHeap struct {
	free []int
	left map[MachineID]int // GPUs already taken per machine in this placement
	ms   []MachineID
}

func (h *freeHeap) avail(m MachineID) int { return h.free[m] - h.left[m] }
func (h *freeHeap) Len() int              { return len(h.ms) }
func (h *freeHeap) Less(a, b int) bool {
	x, y := h.avail(h.ms[a]), h.avail(h.ms[b])
	if x != y {
		return x > y
	}
	return h.ms[a] < h.ms[b]
}
func (h *freeHeap) Swap(a, b int) { h.ms[a], h.ms[b] = h.ms[b], h.ms[a] }
func (h *freeHeap) Push(x any)    { h.ms = append(h.ms, x.(MachineID)) }
func (h *freeHeap) Pop() any {
	m := h.ms[len(h.ms)-1]
	h.ms = h.ms[:len(h.ms)-1]
	return m
}

func (h *freeHeap) init() { heap.Init(h) }

// popMax removes the machine with the most available GPUs, if it has any.
func (h *freeHeap) popMax() (MachineID, bool) {
	if h.Len() == 0 || h.avail(h.ms[0]) <= 0 {
		return 0, false
	}
	return heap.Pop(h).(MachineID), true
}

// push returns a machine to the heap if it still has GPUs available.
func (h *freeHeap) push(m MachineID) {
	if h.avail(m) > 0 {
		heap.Push(h, m)
	}
}
