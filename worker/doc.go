// Package worker is the INA worker agent: all-reduce of int32 and float32 tensors through an
// aggregating switch and a parameter server, with a window, AIMD, retransmission and an exact
// overflow path.
package worker
