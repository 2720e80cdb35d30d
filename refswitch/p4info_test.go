package refswitch

import (
	"context"
	"testing"

	"github.com/inapack/inapack/p4src"
)

// TestCommittedP4Info checks that the P4Info p4c made from p4src (embedded in package p4src)
// declares everything the model implements, and that a client can push it.
func TestCommittedP4Info(t *testing.T) {
	info, err := p4src.LoadP4Info()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bindPipeline(info); err != nil {
		t.Fatalf("the committed P4Info does not fit the model: %v", err)
	}
	_, c := startServer(t)
	cl, _ := primary(t, c, 1)
	if _, err := cl.SetFwdPipeFromBytes(context.Background(), []byte("{}"), p4src.P4Info, 1); err != nil {
		t.Fatal(err)
	}
}
