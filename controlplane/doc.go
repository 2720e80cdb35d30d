// Package controlplane is the INA switch controller, speaking P4Runtime (README.md).
package controlplane
