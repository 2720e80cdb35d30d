package model

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"net/netip"
	"slices"

	"github.com/inapack/inapack/p4src/wire"
)

// MaxPort is the largest port a 9-bit v1model port field can name.
const MaxPort = 511

// ErrInvalid wraps every table-write validation error.
var ErrInvalid = errors.New("model: invalid table entry")

// Role is the action of an ina_job entry.
type Role uint8

const (
	RoleWorker  Role = iota // ina_worker: a member worker's port
	RoleResult              // ina_result: results from the PS side, replicated to a group
	RoleTransit             // ina_transit: data forwarded to the PS without aggregation
)

func (r Role) String() string {
	switch r {
	case RoleWorker:
		return "worker"
	case RoleResult:
		return "result"
	case RoleTransit:
		return "transit"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// JobKey is the key of the ina_job table: a job's sender is its ingress port and, for several
// workers of the job behind one port, the member index its packets carry (0 otherwise).
type JobKey struct {
	Job    uint16
	Port   uint16
	Member uint8
}

// JobEntry is the action data of an ina_job entry. Only the fields of its Role are used.
type JobEntry struct {
	Role        Role
	WorkerBit   uint32 // ina_worker: the worker's bit (a mask with exactly one bit set)
	FanIn       uint8  // ina_worker: members aggregated at this switch (0 acts as 1, as in P4)
	PriorityCap uint8  // ina_worker: the highest priority the job may claim
	INAEnabled  bool   // ina_worker: false = every packet bypasses the slots
	McastGroup  uint16 // ina_result: the PRE group the result is replicated to (0: none)
}

// PSEntry is the action data of an ina_ps entry: where "to the PS" goes for a job.
type PSEntry struct {
	Port uint16
	MAC  [6]byte
	IP   [4]byte
}

// UnicastKey is the key of the ina_unicast table: a job and a result's bitmap, the one bit of the
// worker a FLAG_UNICAST result is for.
type UnicastKey struct {
	Job    uint16
	Bitmap uint32
}

// Route is an ipv4_lpm entry with the ipv4_forward action.
type Route struct {
	Prefix netip.Prefix
	Port   uint16
	DstMAC [6]byte
}

func checkJob(job uint16) error {
	if job == 0 || job >= wire.MaxJobs {
		return fmt.Errorf("%w: job id %d outside 1..%d", ErrInvalid, job, wire.MaxJobs-1)
	}
	return nil
}

func checkPort(port uint16) error {
	if port > MaxPort {
		return fmt.Errorf("%w: port %d > %d", ErrInvalid, port, MaxPort)
	}
	return nil
}

func (e JobEntry) validate() error {
	switch e.Role {
	case RoleWorker:
		if bits.OnesCount32(e.WorkerBit) != 1 {
			return fmt.Errorf("%w: worker_bit %#x must have exactly one bit set", ErrInvalid, e.WorkerBit)
		}
		// Any fan_in fits the P4 field; docs/protocol.md defines 0 and values above the members.
	case RoleResult, RoleTransit:
	default:
		return fmt.Errorf("%w: unknown role %d", ErrInvalid, e.Role)
	}
	return nil
}

// SetJob inserts or modifies an ina_job entry.
func (s *Switch) SetJob(k JobKey, e JobEntry) error {
	if err := checkJob(k.Job); err != nil {
		return err
	}
	if err := checkPort(k.Port); err != nil {
		return err
	}
	if k.Member >= wire.MaxMembers {
		return fmt.Errorf("%w: member %d > %d", ErrInvalid, k.Member, wire.MaxMembers-1)
	}
	if err := e.validate(); err != nil {
		return fmt.Errorf("job %d port %d member %d: %w", k.Job, k.Port, k.Member, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[k] = e
	return nil
}

// DeleteJob removes an ina_job entry and reports whether it existed.
func (s *Switch) DeleteJob(k JobKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.jobs[k]
	delete(s.jobs, k)
	return ok
}

// Job returns an ina_job entry.
func (s *Switch) Job(k JobKey) (JobEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.jobs[k]
	return e, ok
}

// Jobs returns a copy of the ina_job table.
func (s *Switch) Jobs() map[JobKey]JobEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[JobKey]JobEntry, len(s.jobs))
	for k, e := range s.jobs {
		m[k] = e
	}
	return m
}

// SetPS inserts or modifies the ina_ps entry of a job.
func (s *Switch) SetPS(job uint16, e PSEntry) error {
	if err := checkJob(job); err != nil {
		return err
	}
	if err := checkPort(e.Port); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ps[job] = psSlot{PSEntry: e, ok: true}
	return nil
}

// DeletePS removes the ina_ps entry of a job and reports whether it existed.
func (s *Switch) DeletePS(job uint16) bool {
	if job >= wire.MaxJobs {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.ps[job].ok
	s.ps[job] = psSlot{}
	return ok
}

// PS returns the ina_ps entry of a job.
func (s *Switch) PS(job uint16) (PSEntry, bool) {
	if job >= wire.MaxJobs {
		return PSEntry{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ps[job].PSEntry, s.ps[job].ok
}

// AllPS returns a copy of the ina_ps table.
func (s *Switch) AllPS() map[uint16]PSEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[uint16]PSEntry{}
	for j, e := range s.ps {
		if e.ok {
			m[uint16(j)] = e.PSEntry
		}
	}
	return m
}

// SetUnicast inserts or modifies an ina_unicast entry: a FLAG_UNICAST result of k.Job whose bitmap
// is k.Bitmap (a worker's bit) leaves by port alone.
func (s *Switch) SetUnicast(k UnicastKey, port uint16) error {
	if err := checkJob(k.Job); err != nil {
		return err
	}
	if err := checkPort(port); err != nil {
		return err
	}
	if bits.OnesCount32(k.Bitmap) != 1 {
		return fmt.Errorf("%w: ina_unicast bitmap %#x must have exactly one bit set (a worker's bit)", ErrInvalid, k.Bitmap)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unicast[k] = port
	return nil
}

// DeleteUnicast removes an ina_unicast entry and reports whether it existed.
func (s *Switch) DeleteUnicast(k UnicastKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.unicast[k]
	delete(s.unicast, k)
	return ok
}

// Unicast returns the port of an ina_unicast entry.
func (s *Switch) Unicast(k UnicastKey) (uint16, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.unicast[k]
	return p, ok
}

// Unicasts returns a copy of the ina_unicast table.
func (s *Switch) Unicasts() map[UnicastKey]uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.unicast)
}

// SetRoute inserts or modifies an ipv4_lpm entry. The prefix is stored masked.
func (s *Switch) SetRoute(r Route) error {
	if !r.Prefix.IsValid() || !r.Prefix.Addr().Is4() {
		return fmt.Errorf("%w: route prefix %v is not an IPv4 prefix", ErrInvalid, r.Prefix)
	}
	if err := checkPort(r.Port); err != nil {
		return err
	}
	r.Prefix = r.Prefix.Masked()
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.routes, func(x Route) bool { return x.Prefix == r.Prefix })
	if i >= 0 {
		s.routes[i] = r
		return nil
	}
	s.routes = append(s.routes, r)
	// Longest prefix first, so the first match is the LPM result.
	slices.SortStableFunc(s.routes, func(a, b Route) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	return nil
}

// DeleteRoute removes an ipv4_lpm entry and reports whether it existed.
func (s *Switch) DeleteRoute(p netip.Prefix) bool {
	p = p.Masked()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.routes)
	s.routes = slices.DeleteFunc(s.routes, func(x Route) bool { return x.Prefix == p })
	return len(s.routes) != n
}

// Routes returns a copy of the ipv4_lpm table, longest prefix first.
func (s *Switch) Routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.routes)
}

// SetMcastGroup creates or replaces a multicast group; replicas leave in the order given.
func (s *Switch) SetMcastGroup(id uint16, ports []uint16) error {
	if id == 0 {
		return fmt.Errorf("%w: multicast group 0 is reserved", ErrInvalid)
	}
	seen := map[uint16]bool{}
	for _, p := range ports {
		if err := checkPort(p); err != nil {
			return err
		}
		if seen[p] {
			return fmt.Errorf("%w: port %d twice in multicast group %d", ErrInvalid, p, id)
		}
		seen[p] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = slices.Clone(ports)
	return nil
}

// DeleteMcastGroup removes a multicast group and reports whether it existed.
func (s *Switch) DeleteMcastGroup(id uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.groups[id]
	delete(s.groups, id)
	return ok
}

// McastGroups returns a copy of the multicast groups.
func (s *Switch) McastGroups() map[uint16][]uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[uint16][]uint16, len(s.groups))
	for id, p := range s.groups {
		m[id] = slices.Clone(p)
	}
	return m
}
