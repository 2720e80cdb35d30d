// Package bmv2 holds the Mininet runner (run.py, ina_switches.py) and its end-to-end test; the Go
// files here only test that the shipped topologies run an exact all-reduce.
package bmv2
