// Package worker is the INA worker agent: exact all-reduce of int32 and float32 tensors (README.md).
package worker
