package plugin

import "os"

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
