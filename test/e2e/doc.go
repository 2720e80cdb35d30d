// Package e2e runs the agents against a switch end to end, in memory or in network namespaces.
package e2e
