package conformance

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// ModelTarget runs vectors against the Go model of the pipeline.
type ModelTarget struct {
	Switch *model.Switch
}

// NewModelTarget returns a target around a fresh model switch.
func NewModelTarget() *ModelTarget { return &ModelTarget{Switch: model.New()} }

// Setup implements Target.
func (m *ModelTarget) Setup(s *Setup) error {
	sw := m.Switch
	sw.Reset()
	st, err := s.ModelSettings()
	if err != nil {
		return err
	}
	sw.SetSettings(st)
	for _, r := range s.IPv4 {
		mr, err := r.Model()
		if err != nil {
			return err
		}
		if err := sw.SetRoute(mr); err != nil {
			return err
		}
	}
	for _, p := range s.PS {
		e, err := p.Model()
		if err != nil {
			return err
		}
		if err := sw.SetPS(p.Job, e); err != nil {
			return err
		}
	}
	for _, j := range s.Jobs {
		k, e, err := j.Model()
		if err != nil {
			return err
		}
		if err := sw.SetJob(k, e); err != nil {
			return err
		}
	}
	for _, g := range s.Mcast {
		if err := sw.SetMcastGroup(g.Group, g.Ports); err != nil {
			return err
		}
	}
	for _, u := range s.Unicast {
		if u.WorkerBit >= wire.MaxWorkers {
			return fmt.Errorf("unicast worker_bit %d is not a rank 0..31", u.WorkerBit)
		}
		if err := sw.SetUnicast(model.UnicastKey{Job: u.Job, Bitmap: 1 << u.WorkerBit}, u.Port); err != nil {
			return err
		}
	}
	return nil
}

// Send implements Target.
func (m *ModelTarget) Send(port uint16, frame []byte) ([]Output, error) {
	outs := m.Switch.Process(port, frame)
	res := make([]Output, len(outs))
	for i, o := range outs {
		res[i] = Output{Port: o.Port, Frame: o.Frame}
	}
	return res, nil
}

// Counters implements Target.
func (m *ModelTarget) Counters(jobs []uint16) (*Counters, error) {
	c := &Counters{Jobs: map[uint16][wire.NumEvents]Count{}}
	for i, e := range m.Switch.Events() {
		c.Global[i] = Count(e)
	}
	for _, j := range jobs {
		var v [wire.NumEvents]Count
		for i, e := range m.Switch.JobEvents(j) {
			v[i] = Count(e)
		}
		c.Jobs[j] = v
	}
	return c, nil
}

// DeletePS implements Target.
func (m *ModelTarget) DeletePS(job uint16) error {
	if !m.Switch.DeletePS(job) {
		return fmt.Errorf("no ina_ps entry for job %d", job)
	}
	return nil
}

// ModelSettings is the settings with the P4 program's initial default for omitted fields.
func (s *Setup) ModelSettings() (model.Settings, error) {
	st := model.DefaultSettings()
	if p := s.Settings; p != nil {
		st.Preempt = or(p.Preempt, st.Preempt)
		st.ReleaseOnResult = or(p.ReleaseOnResult, st.ReleaseOnResult)
		st.ECNThreshold = or(p.ECNThreshold, st.ECNThreshold)
		st.ActiveSlots = or(p.ActiveSlots, st.ActiveSlots)
	}
	return st, st.Validate()
}

// Model converts a route to the model's form.
func (r RouteSpec) Model() (model.Route, error) {
	p, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return model.Route{}, err
	}
	mac, err := mac6(r.DstMAC)
	return model.Route{Prefix: p, Port: r.Port, DstMAC: mac}, err
}

// Model converts a PS entry to the model's form.
func (p PSSpec) Model() (model.PSEntry, error) {
	mac, err := mac6(p.MAC)
	if err != nil {
		return model.PSEntry{}, err
	}
	ip, err := parseIP4(p.IP)
	if err != nil {
		return model.PSEntry{}, err
	}
	return model.PSEntry{Port: p.Port, MAC: mac, IP: [4]byte(ip)}, nil
}

// Model converts a job entry to the model's form.
func (j JobSpec) Model() (model.JobKey, model.JobEntry, error) {
	k := model.JobKey{Job: j.Job, Port: j.Port, Member: j.Member}
	r, err := ParseRole(j.Role)
	if err != nil {
		return k, model.JobEntry{}, err
	}
	if j.WorkerBit >= wire.MaxWorkers {
		return k, model.JobEntry{}, fmt.Errorf("worker_bit %d is not a rank 0..31", j.WorkerBit)
	}
	roles := [...]model.Role{RoleWorker: model.RoleWorker, RoleResult: model.RoleResult, RoleTransit: model.RoleTransit}
	return k, model.JobEntry{
		Role: roles[r], WorkerBit: 1 << j.WorkerBit, FanIn: j.FanIn, PriorityCap: j.PriorityCap,
		INAEnabled: j.Enabled(), McastGroup: j.McastGroup,
	}, nil
}

func mac6(s string) ([6]byte, error) {
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != 6 {
		return [6]byte{}, fmt.Errorf("%q is not a 6-byte MAC address", s)
	}
	return [6]byte(m), nil
}
