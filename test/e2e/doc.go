// Package e2e holds the end-to-end tests (workers, PS and a switch) and the in-memory fabric that
// connects the agents to the Go model of the switch.
package e2e
