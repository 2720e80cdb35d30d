package model_test

import (
	"testing"

	"github.com/inapack/inapack/test/conformance"
)

// TestVectors runs every conformance vector in test/vectors against the model, one subtest per file.
func TestVectors(t *testing.T) {
	conformance.RunVectors(t, conformance.NewModelTarget(), conformance.Dir(), nil)
}
