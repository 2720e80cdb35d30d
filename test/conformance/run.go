package conformance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/inapack/inapack/p4src/wire"
)

// Mismatch is one way a target's behaviour differed from a vector.
type Mismatch struct {
	Step    int
	Comment string
	What    string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("step %d (%s):\n%s", m.Step, m.Comment, m.What)
}

// Report joins mismatches into one readable block.
func Report(ms []Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String())
		b.WriteString("\n")
	}
	return b.String()
}

// Run sets the target up from the vector and plays every step, returning how the target differed.
// An error means the target itself failed (setup rejected, I/O), not a mismatch.
func Run(tg Target, v *Vector) ([]Mismatch, error) {
	if err := tg.Setup(&v.Setup); err != nil {
		return nil, fmt.Errorf("%s: setup: %w", v.Name, err)
	}
	jobs := v.countedJobs()
	var ms []Mismatch
	for i := range v.Steps {
		st := &v.Steps[i]
		fail := func(format string, a ...any) {
			ms = append(ms, Mismatch{Step: i, Comment: st.Comment, What: fmt.Sprintf(format, a...)})
		}
		in, err := st.In.Packet.Build()
		if err != nil {
			return ms, fmt.Errorf("%s step %d: %w", v.Name, i, err)
		}
		for _, j := range st.DeletePS {
			if err := tg.DeletePS(j); err != nil {
				return ms, fmt.Errorf("%s step %d: delete ina_ps %d: %w", v.Name, i, j, err)
			}
		}
		before, err := tg.Counters(jobs)
		if err != nil {
			return ms, err
		}
		got, err := tg.Send(st.In.Port, in)
		if err != nil {
			return ms, fmt.Errorf("%s step %d: send: %w", v.Name, i, err)
		}
		after, err := tg.Counters(jobs)
		if err != nil {
			return ms, err
		}
		want, err := st.expected()
		if err != nil {
			return ms, fmt.Errorf("%s step %d: %w", v.Name, i, err)
		}
		for _, d := range compareOutputs(want, got) {
			fail("%s", d)
		}
		for _, d := range compareCounters(st.Counters, len(in), before, after, jobs) {
			fail("%s", d)
		}
	}
	return ms, nil
}

// countedJobs are the jobs whose counters every step checks: those in setup.ps and those named.
func (v *Vector) countedJobs() []uint16 {
	seen := map[uint16]bool{}
	for _, p := range v.Setup.PS {
		seen[p.Job] = true
	}
	for _, s := range v.Steps {
		for j := range s.Counters.Jobs {
			n, _ := strconv.ParseUint(j, 10, 16) // Check has validated it
			seen[uint16(n)] = true
		}
	}
	var js []uint16
	for j := range seen {
		js = append(js, j)
	}
	sort.Slice(js, func(a, b int) bool { return js[a] < js[b] })
	return js
}

func (s *Step) expected() ([]Output, error) {
	var out []Output
	for _, o := range s.Out {
		b, err := o.Packet.Build()
		if err != nil {
			return nil, err
		}
		out = append(out, Output{Port: o.Port, Frame: b})
	}
	return out, nil
}

func byPort(os []Output) map[uint16][][]byte {
	m := map[uint16][][]byte{}
	for _, o := range os {
		m[o.Port] = append(m[o.Port], o.Frame)
	}
	return m
}

// compareOutputs matches packets per port in order; ports may come in any order.
func compareOutputs(want, got []Output) []string {
	wm, gm := byPort(want), byPort(got)
	ports := map[uint16]bool{}
	for p := range wm {
		ports[p] = true
	}
	for p := range gm {
		ports[p] = true
	}
	var ps []int
	for p := range ports {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	var out []string
	for _, p := range ps {
		w, g := wm[uint16(p)], gm[uint16(p)]
		for k := 0; k < max(len(w), len(g)); k++ {
			switch {
			case k >= len(g):
				out = append(out, fmt.Sprintf("port %d packet %d: missing, want %s", p, k, Summary(w[k])))
			case k >= len(w):
				out = append(out, fmt.Sprintf("port %d packet %d: unexpected %s", p, k, Summary(g[k])))
			default:
				if d := Diff(w[k], g[k]); d != "" {
					out = append(out, fmt.Sprintf("port %d packet %d (%s):\n%s", p, k, Summary(w[k]), d))
				}
			}
		}
	}
	return out
}

// compareCounters checks packet deltas against d and byte deltas against packets x frameLen: every
// event a step causes is counted with the length of the frame it sent (an INA packet leaves with
// the length it came with, so ecn_marked too).
func compareCounters(d Deltas, frameLen int, before, after *Counters, jobs []uint16) []string {
	var out []string
	check := func(scope string, want map[string]uint64, b, a [wire.NumEvents]Count) {
		for e := wire.Event(0); e < wire.NumEvents; e++ {
			w := want[e.String()]
			if g := a[e].Packets - b[e].Packets; g != w {
				out = append(out, fmt.Sprintf("counter %s %s: want +%d, got +%d", scope, e, w, g))
			} else if g := a[e].Bytes - b[e].Bytes; g != w*uint64(frameLen) {
				out = append(out, fmt.Sprintf("counter %s %s bytes: want +%d (%d x %d), got +%d",
					scope, e, w*uint64(frameLen), w, frameLen, g))
			}
		}
	}
	check("global", d.Global, before.Global, after.Global)
	for _, j := range jobs {
		check(fmt.Sprintf("job %d", j), d.Jobs[strconv.Itoa(int(j))], before.Jobs[j], after.Jobs[j])
	}
	return out
}
