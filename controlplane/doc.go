// Package controlplane is the INA switch controller: it pushes the pipeline, installs the desired
// state from a declarative config over P4Runtime, manages job entries and slots, and exports counters.
package controlplane
