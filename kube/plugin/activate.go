package plugin

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// activate brings a's other pods not bound yet to the active queue once, when the gang is
// planned: a pod PreEnqueue held back while another of the gang was gated (Kueue ungates a
// gang's pods one by one) is not queued again by that pod's ungating, an update of another pod.
// Not under p.mu: the queue calls PreEnqueue under its lock, and PreEnqueue may take p.mu.
func (p *NetPack) activate(ctx context.Context, a *attempt, self *v1.Pod) {
	p.mu.Lock()
	if a.activated {
		p.mu.Unlock()
		return
	}
	a.activated = true
	pods := map[string]*v1.Pod{}
	for uid, pod := range a.pods {
		if uid != self.UID && !a.bound.Has(uid) && !a.reserved.Has(uid) {
			pods[pod.Namespace+"/"+pod.Name] = pod
		}
	}
	p.mu.Unlock()
	if len(pods) > 0 {
		p.h.Activate(klog.FromContext(ctx), pods)
	}
}
