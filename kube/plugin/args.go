package plugin

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/kube/gang"
)

// Args are the plugin's arguments in a KubeSchedulerConfiguration profile (pluginConfig, name
// NetPack). Every field is optional.
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
	// operator deployed).
	ReadyTimeout    *metav1.Duration `json:"readyTimeout,omitempty"`
	WaitForOperator *bool            `json:"waitForOperator,omitempty"`
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
		if d != nil && d.Duration < 0 {
			return fmt.Errorf("NetPack args: %s %v: want a positive duration", name, d.Duration)
		}
	}
	return nil
}
