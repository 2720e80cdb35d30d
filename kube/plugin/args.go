package plugin

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/inapack/inapack/kube/gang"
)

// Args are the plugin's arguments in a KubeSchedulerConfiguration profile (pluginConfig, name
// NetPack), as scheduler-plugins' CoschedulingArgs are: a typed struct decoded strictly (a
// misspelt or unknown field is an error that names it), defaulted (SetDefaults) and validated
// (Validate) before the plugin starts. Every field is optional.
type Args struct {
	// Policy is the placement policy (default netpack; the baselines are there for comparison).
	Policy string `json:"policy,omitempty"`
	// NICGbps is a node's NIC where the node has no inapack.io/nic-gbps annotation (default 100);
	// UplinkGbps each rack's uplink (default 200); CoreGbps the core (default all uplinks).
	NICGbps    float64 `json:"nicGbps,omitempty"`
	UplinkGbps float64 `json:"uplinkGbps,omitempty"`
	CoreGbps   float64 `json:"coreGbps,omitempty"`
	// INAMemoryBytes is each ToR's aggregator memory and RTT how long a slot is held.
	INAMemoryBytes float64          `json:"inaMemoryBytes,omitempty"`
	RTT            *metav1.Duration `json:"rtt,omitempty"`
	// PermitTimeout is how long the first pods of a gang wait for the rest before the gang is
	// given up and planned anew (default 60s).
	PermitTimeout *metav1.Duration `json:"permitTimeout,omitempty"`
	// ReadyTimeout is how long a pod waits before its bind for the operator to have installed its
	// gang on the switches (default 60s); WaitForOperator false binds at once (placement only, no
	// operator deployed; default true).
	ReadyTimeout    *metav1.Duration `json:"readyTimeout,omitempty"`
	WaitForOperator *bool            `json:"waitForOperator,omitempty"`
}

// DecodeArgs is obj (the profile's args for NetPack; nil for none) as Args, strictly: an unknown
// field (a misspelling) or a value of the wrong type is an error; then defaulted and validated.
func DecodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return a, fmt.Errorf("NetPack args: want runtime.Unknown, got %T", obj)
		}
		if len(u.Raw) > 0 {
			// JSON is YAML: one strict decoder for either content type.
			if err := yaml.UnmarshalStrict(u.Raw, &a); err != nil {
				return a, fmt.Errorf("NetPack args: %w (the fields are policy, nicGbps, uplinkGbps, coreGbps, inaMemoryBytes, rtt, permitTimeout, readyTimeout, waitForOperator)", err)
			}
		}
	}
	a.SetDefaults()
	return a, a.Validate()
}

// SetDefaults fills what a leaves unset.
func (a *Args) SetDefaults() {
	c := gang.Config{Policy: a.Policy, NICGbps: a.NICGbps, UplinkGbps: a.UplinkGbps, INAMemoryBytes: a.INAMemoryBytes}.WithDefaults()
	a.Policy, a.NICGbps, a.UplinkGbps, a.INAMemoryBytes = c.Policy, c.NICGbps, c.UplinkGbps, c.INAMemoryBytes
	if a.RTT == nil {
		a.RTT = &metav1.Duration{Duration: time.Duration(c.WithDefaults().RTT)}
	}
	if a.PermitTimeout == nil {
		a.PermitTimeout = &metav1.Duration{Duration: time.Minute}
	}
	if a.ReadyTimeout == nil {
		a.ReadyTimeout = &metav1.Duration{Duration: time.Minute}
	}
	if a.WaitForOperator == nil {
		t := true
		a.WaitForOperator = &t
	}
}

func dur(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration == 0 {
		return def
	}
	return d.Duration
}

// Config is the gang package's model configuration these arguments give.
func (a *Args) Config() gang.Config {
	return gang.Config{Policy: a.Policy, NICGbps: a.NICGbps, UplinkGbps: a.UplinkGbps, CoreGbps: a.CoreGbps,
		INAMemoryBytes: a.INAMemoryBytes, RTT: dur(a.RTT, 0)}.WithDefaults()
}

// Validate reports the first argument that cannot work.
func (a *Args) Validate() error {
	if err := a.Config().Validate(); err != nil {
		return fmt.Errorf("NetPack args: %w", err)
	}
	for name, d := range map[string]*metav1.Duration{"rtt": a.RTT, "permitTimeout": a.PermitTimeout, "readyTimeout": a.ReadyTimeout} {
		if d != nil && d.Duration <= 0 {
			return fmt.Errorf("NetPack args: %s %v: want a positive duration", name, d.Duration)
		}
	}
	return nil
}
