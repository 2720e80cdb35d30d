package operator

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRetryDelayBounded: a request that keeps failing is retried after 100ms, doubling, and never
// later than the configured cap (30s by default; controller-runtime's own limiter reaches 1000s,
// about 17 minutes); a success starts it over. The live side (the cap in use) is
// TestControllerDownKeepsFinalizers.
func TestRetryDelayBounded(t *testing.T) {
	cfg := Config{}.withDefaults()
	if cfg.MaxRetryDelay != 30*time.Second {
		t.Errorf("default max retry delay %v, want 30s", cfg.MaxRetryDelay)
	}
	l := retryLimiter(cfg.MaxRetryDelay)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "plan"}}
	var delays []time.Duration
	for range 40 {
		delays = append(delays, l.When(req))
	}
	if delays[0] != 100*time.Millisecond || delays[1] != 200*time.Millisecond {
		t.Errorf("first delays %v, want 100ms, 200ms", delays[:2])
	}
	for i, d := range delays {
		if d > cfg.MaxRetryDelay {
			t.Fatalf("failure %d waits %v, over the cap %v", i+1, d, cfg.MaxRetryDelay)
		}
	}
	if last := delays[len(delays)-1]; last != cfg.MaxRetryDelay {
		t.Errorf("after 40 failures the delay is %v, want the cap %v", last, cfg.MaxRetryDelay)
	}
	l.Forget(req)
	if d := l.When(req); d != 100*time.Millisecond {
		t.Errorf("after a success the next failure waits %v, want 100ms", d)
	}
}
