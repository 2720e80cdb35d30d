// Package ps is the INA parameter server: it merges partial sums by worker bitmap, completes each
// chunk exactly once, handles the overflow path and answers late retransmissions.
package ps
