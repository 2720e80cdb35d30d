package plugin_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inapack/inapack/kube/plugin"
)

// TestArgsStrictAndDefaulted: NetPack's args decode strictly (a misspelt field is an error that
// names it, as is a value of the wrong type or an impossible one) and unset fields get their
// defaults.
func TestArgsStrictAndDefaulted(t *testing.T) {
	for raw, want := range map[string]string{
		`{"permitTimout": "10s"}`:         `unknown field "permitTimout"`,
		"policy: netpack\nuplinkGbs: 100": `unknown field "uplinkGbs"`,
		`{"nicGbps": "fast"}`:             "nicGbps",
		`{"policy": "best"}`:              `policy "best"`,
		`{"readyTimeout": "-1s"}`:         "readyTimeout",
	} {
		_, err := plugin.DecodeArgs(&runtime.Unknown{Raw: []byte(raw)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("args %s: error %v, want one containing %q", raw, err, want)
		}
	}
	a, err := plugin.DecodeArgs(&runtime.Unknown{Raw: []byte(`{"uplinkGbps": 0.02, "waitForOperator": false}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy != "netpack" || a.NICGbps != 100 || a.UplinkGbps != 0.02 || a.PermitTimeout.Duration != time.Minute ||
		a.ReadyTimeout.Duration != time.Minute || a.WaitForOperator == nil || *a.WaitForOperator || a.RTT == nil || a.RTT.Duration <= 0 {
		t.Errorf("defaulted args %+v", a)
	}
	if _, err := plugin.DecodeArgs(nil); err != nil {
		t.Errorf("no args: %v", err)
	}
}
