package plugin

import (
	"os"

	"github.com/inapack/inapack/kube/gang"
)

// INAPACK_MUTATION breaks the gang logic in this test binary only (mutation_test.go runs the
// binary again with it): permit lets every pod go at Permit, preenqueue queues incomplete gangs.
func init() {
	switch os.Getenv("INAPACK_MUTATION") {
	case "permit":
		mutation.permitAllows = true
	case "preenqueue":
		mutation.preEnqueueAdmits = true
	}
}

// ForgetWaitingGangs empties the process's gangs_waiting gauge (tests of one package share it).
func ForgetWaitingGangs() {
	waiting.Lock()
	defer waiting.Unlock()
	waiting.m = map[gang.Key]waitEntry{}
}
