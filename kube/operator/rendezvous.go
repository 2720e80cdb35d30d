package operator

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/inapack/inapack/kube/gang"
)

// rendezvous is where a plan's rank 0 serves torchrun's store (MASTER_ADDR, MASTER_PORT): the
// wiring of every pod, and the label on rank 0's pod that the gang's headless Service selects.
type rendezvous struct {
	service string // the gang's headless Service ("" for none)
	addr    string // "" when unknown: left out of the wiring
	port    int
}

// masterService is the Service a plan's pods name (gang.MasterServiceAnnotation): one DNS-1035
// label (a Service's name) on every pod that names one (the workers, say, and not the PS), or
// none.
func masterService(pods []*v1.Pod) (string, error) {
	svc, first := "", ""
	for _, p := range pods {
		s := p.Annotations[gang.MasterServiceAnnotation]
		switch {
		case s == "":
		case svc == "":
			svc, first = s, p.Name
		case s != svc:
			return "", fmt.Errorf("pods %s and %s name different Services in %s (%q, %q)", first, p.Name,
				gang.MasterServiceAnnotation, svc, s)
		}
	}
	if svc != "" {
		if errs := validation.IsDNS1035Label(svc); len(errs) > 0 {
			return "", fmt.Errorf("pod %s: %s=%q is no Service name: %v", first, gang.MasterServiceAnnotation, svc, errs)
		}
	}
	return svc, nil
}

// rendezvous is the plan's: the port from its switch job, the address its Service's name or, with
// none, rank 0's node's InternalIP (INAPack's pods use the host network: the node's address is
// theirs). A node that has no InternalIP, or that the operator may not read or cannot find, leaves
// MASTER_ADDR empty, with a Warning event: only a gang that runs torchrun needs it, and torchrun
// then stops at once saying so, where refusing the plan would stop every gang for an address most
// never use. Any other error of the API server is returned, for a retry.
func (r *reconciler) rendezvous(ctx context.Context, pl *plan, a allocation) (rendezvous, error) {
	rv := rendezvous{service: pl.masterService, port: r.cfg.MasterPortBase + a.SwitchJob}
	if rv.service != "" {
		rv.addr = rv.service + "." + pl.workers[0].Namespace + ".svc"
		return rv, nil
	}
	var n v1.Node
	err := r.api.Get(ctx, types.NamespacedName{Name: node(pl.workers[0])}, &n)
	if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		return rv, fmt.Errorf("reading rank 0's node for MASTER_ADDR: %w", err)
	}
	if err == nil {
		for _, ad := range n.Status.Addresses {
			if ad.Type == v1.NodeInternalIP {
				rv.addr = ad.Address
				return rv, nil
			}
		}
		err = fmt.Errorf("node %s has no InternalIP", n.Name)
	}
	msg := fmt.Sprintf("MASTER_ADDR left empty: rank 0's node's address: %v (name a headless Service in %s instead)", err,
		gang.MasterServiceAnnotation)
	log.FromContext(ctx).Info("no rendezvous address for a plan", "plan", pl.id, "err", err)
	for _, p := range pl.pods() {
		r.events.Eventf(p, nil, v1.EventTypeWarning, "INAMasterAddrUnknown", "Install", "%s", msg)
	}
	return rv, nil
}

// annotate writes rv into a pod's wiring.
func (rv rendezvous) annotate(m map[string]string) {
	m[gang.MasterPortAnnotation] = strconv.Itoa(rv.port)
	if rv.addr != "" {
		m[gang.MasterAddrAnnotation] = rv.addr
	}
}

// label puts MasterLabel on rank 0's pod and takes it off the others (a plan made anew may have
// another rank 0): the headless Service then selects rank 0 alone.
func (rv rendezvous) label(pl *plan, q *v1.Pod) {
	if rv.service != "" && q.Name == pl.workers[0].Name {
		if q.Labels == nil {
			q.Labels = map[string]string{}
		}
		q.Labels[gang.MasterLabel] = rv.service
	} else {
		delete(q.Labels, gang.MasterLabel)
	}
}
