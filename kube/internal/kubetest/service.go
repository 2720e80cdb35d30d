package kubetest

import (
	"fmt"
	"slices"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// Service is where the scheduler service puts a sequence of jobs on a topology: scheduler.Plan
// on the topology's model, each job added to the running set in turn. Tests compare Kubernetes'
// placements with it.
type Service struct {
	c       *scheduler.Cluster
	running []netpack.Placement
}

// NewService models t as the scheduler service does.
func NewService(t *topology.Topology) (*Service, error) {
	c, err := scheduler.NewCluster(t, scheduler.ClusterParams{})
	if err != nil {
		return nil, err
	}
	return &Service{c: c}, nil
}

// Place places j next and returns its workers' hosts (sorted) and its PS's host.
func (s *Service) Place(j Job) (workers []string, ps string, err error) {
	md, ok := netpack.Profile(j.Model)
	if !ok {
		return nil, "", fmt.Errorf("model %s", j.Model)
	}
	// PSMaxGPUs as gang.Gang.PSMaxGPUs gives the plugin's: several pods of a gang on a node.
	nj := &netpack.Job{ID: j.Namespace + "/" + j.Name, GPUs: j.Workers * j.GPUsPerWorker, Model: md, Iterations: 1, PSMaxGPUs: j.GPUsPerWorker}
	p, ok, _, err := scheduler.Plan(s.c.Model, s.running, "netpack", nj)
	if err != nil || !ok {
		return nil, "", fmt.Errorf("the service cannot place %s: ok=%v err=%v", j.Name, ok, err)
	}
	s.running = append(s.running, p)
	for _, w := range p.Workers {
		workers = append(workers, s.c.Hosts[w.Machine])
	}
	slices.Sort(workers)
	return workers, s.c.Hosts[p.PS], nil
}

// Placed splits the nodes of j's pods (WaitBound's answer) into its workers' (sorted) and its PS's.
func Placed(j Job, nodes map[string]string) (workers []string, ps string) {
	_, pods := j.Objects()
	for pod, n := range nodes {
		if pod == pods[0].Name {
			ps = n
		} else {
			workers = append(workers, n)
		}
	}
	slices.Sort(workers)
	return workers, ps
}
