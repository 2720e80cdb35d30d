package agentlog

import (
	"maps"
	"testing"
)

func TestFields(t *testing.T) {
	got := Fields("worker-summary: job=3 rank=1 status=ok goodput_mbps=19.8 note=a=b")
	want := map[string]string{"job": "3", "rank": "1", "status": "ok", "goodput_mbps": "19.8", "note": "a=b"}
	if !maps.Equal(got, want) {
		t.Errorf("Fields = %v, want %v", got, want)
	}
	if got := Fields("worker-error: no progress"); len(got) != 0 {
		t.Errorf("no fields: %v", got)
	}
}
