package eval

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Packets is the summary `ina-cluster demo --summary` writes: every policy's mean JCT measured on
// an emulated cluster in each round, beside the simulator's for the same trace.
type Packets struct {
	Switch   string         `json:"switch"`
	Topology string         `json:"topology"`
	Trace    string         `json:"trace"`
	Jobs     int            `json:"jobs"`
	Repeats  int            `json:"repeats"`
	Work     float64        `json:"work"`
	Policies []PacketPolicy `json:"policies"`
}

// PacketPolicy is one policy's rounds.
type PacketPolicy struct {
	Policy          string    `json:"policy"`
	MeasuredMeanJCT []float64 `json:"measured_mean_jct_s"`
	SimMeanJCT      float64   `json:"sim_mean_jct_s"`
	Load1           []float64 `json:"load1"`
}

// LoadPackets reads a packets summary; a file that does not exist is (nil, nil).
func LoadPackets(file string) (*Packets, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pk Packets
	if err := json.Unmarshal(b, &pk); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if pk.Jobs <= 0 || pk.Repeats <= 0 || len(pk.Policies) == 0 {
		return nil, fmt.Errorf("%s: not a packets summary (%d jobs, %d repeats, %d policies)", file, pk.Jobs, pk.Repeats, len(pk.Policies))
	}
	for _, pp := range pk.Policies {
		if len(pp.MeasuredMeanJCT) != pk.Repeats || !(pp.SimMeanJCT > 0) || slices.ContainsFunc(pp.MeasuredMeanJCT, func(x float64) bool { return !(x > 0) || math.IsInf(x, 0) }) {
			return nil, fmt.Errorf("%s: policy %q: %d rounds of %d, simulated %v", file, pp.Policy, len(pp.MeasuredMeanJCT), pk.Repeats, pp.SimMeanJCT)
		}
	}
	return &pk, nil
}

// Section 11.1 is between these markers, so that UpdatePackets can re-render it from a new
// packets summary without re-running the simulations (the packets run and the evaluation are
// long, and each needs the machine to itself).
const (
	packetsBegin = "<!-- section 11.1: netpack evaluate --update-packets rewrites from here -->\n"
	packetsEnd   = "<!-- end of section 11.1 -->\n"
)

// UpdatePackets replaces section 11.1 of a report written by Markdown with the one pk gives.
func UpdatePackets(md string, pk *Packets) (string, error) {
	i, j := strings.Index(md, packetsBegin), strings.Index(md, packetsEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("the report has no section 11.1 markers (regenerate it with make evaluation)")
	}
	var b strings.Builder
	rep := &Report{Cfg: Config{Packets: pk}}
	rep.packetsSection(func(format string, a ...any) { fmt.Fprintf(&b, format, a...) })
	return md[:i] + b.String() + md[j+len(packetsEnd):], nil
}

// packetsSection is section 11.1: the policies ranked on packets and in the simulator.
func (rep *Report) packetsSection(p func(string, ...any)) {
	pk := rep.Cfg.Packets
	p(packetsBegin)
	defer p(packetsEnd)
	p("### 11.1 The policies on packets\n\n")
	if pk == nil {
		p("No packets summary was found when this report was generated (`ina-cluster demo --policies all --repeat 3 --summary docs/packets-summary.json` writes it).\n\n")
		return
	}
	meas := make([]ci, len(pk.Policies))
	var mm, ss []float64
	for i, pp := range pk.Policies {
		meas[i] = tInterval(pp.MeasuredMeanJCT)
		mm, ss = append(mm, meas[i].mean), append(ss, pp.SimMeanJCT)
	}
	rm, rs := ranking(mm), ranking(ss)
	var loads []float64
	for _, pp := range pk.Policies {
		loads = append(loads, pp.Load1...)
	}
	slices.Sort(loads)
	p("`ina-cluster demo --policies all --repeat %d` ran the same %d-job trace (`%s`, iterations x%g) under every policy through the scheduler service on the emulated cluster `%s` (%s switches), ",
		pk.Repeats, pk.Jobs, pk.Trace, pk.Work, pk.Topology, pk.Switch)
	p("in %d rounds of every policy once (so that the machine's load drifts over all alike; 1-minute load average at the runs' starts %.1f to %.1f, median %.1f, on 2 CPUs shared with other work). ",
		pk.Repeats, loads[0], loads[len(loads)-1], loads[len(loads)/2])
	p("Measured: mean JCT over the rounds with its 95%% interval; simulated: `sim.Predict` on the same trace and calibration (deterministic). Rank 1 = lowest mean JCT; equal means share their mean rank.\n\n")
	p("| policy | measured mean JCT s | simulated mean JCT s | rank on packets | rank in the simulator |\n|---|---:|---:|---:|---:|\n")
	for i, pp := range pk.Policies {
		p("| %s | %s | %.1f | %g | %g |\n", pp.Policy, secCI(meas[i]), pp.SimMeanJCT, rm[i], rs[i])
	}
	p("\nSpearman's rank correlation of the two orders: %s over %d policies. ", corr(spearman(rm, rs)), len(rm))
	var tied []string
	for _, pp := range pk.Policies {
		if slices.ContainsFunc(pk.Policies, func(q PacketPolicy) bool { return q.Policy != pp.Policy && q.SimMeanJCT == pp.SimMeanJCT }) {
			tied = append(tied, pp.Policy)
		}
	}
	if len(tied) > 1 {
		p("%d policies have the same simulated mean JCT (%s): on this cluster their placements are equivalent for the simulator, so their order on packets is the measurement's noise, which the intervals show. ",
			len(tied), strings.Join(tied, ", "))
	}
	if i := slices.IndexFunc(pk.Policies, func(pp PacketPolicy) bool { return pp.Policy == "netpack" }); i >= 0 {
		best := -1
		for k, pp := range pk.Policies {
			if !isNetPack(pp.Policy) && (best < 0 || mm[k] < mm[best]) {
				best = k
			}
		}
		if best >= 0 {
			g := pairedRounds(pk.Policies[i].MeasuredMeanJCT, pk.Policies[best].MeasuredMeanJCT)
			p("On packets NetPack's mean JCT against the best baseline measured (%s): %s, paired by round (%s); in the simulator %s.",
				pk.Policies[best].Policy, pctCI(g), sigWords(g), pct1(1-pk.Policies[i].SimMeanJCT/pk.Policies[best].SimMeanJCT))
		}
	}
	p("\n\n")
}

// Table prints the policies: measured mean JCT per round and on average, the simulator's, and
// each policy's rank both ways (1 = lowest mean JCT).
func (pk *Packets) Table(out io.Writer) {
	var mm, ss []float64
	for _, pp := range pk.Policies {
		mm, ss = append(mm, tInterval(pp.MeasuredMeanJCT).mean), append(ss, pp.SimMeanJCT)
	}
	rm, rs := ranking(mm), ranking(ss)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmeasured mean JCT s per round\tmeasured mean\tsimulated\trank measured\trank simulated\t")
	for i, pp := range pk.Policies {
		fmt.Fprintf(tw, "%s\t%v\t%.1f\t%.1f\t%g\t%g\t\n", pp.Policy, pp.MeasuredMeanJCT, mm[i], ss[i], rm[i], rs[i])
	}
	tw.Flush()
}

// pairedRounds is the reduction 1 - a/b per round, with its interval.
func pairedRounds(a, b []float64) ci {
	var g []float64
	for i := range min(len(a), len(b)) {
		g = append(g, 1-a[i]/b[i])
	}
	return tInterval(g)
}

func secCI(c ci) string {
	if math.IsNaN(c.half) {
		return fmt.Sprintf("%.1f", c.mean)
	}
	return fmt.Sprintf("%.1f ± %.1f", c.mean, c.half)
}

// ranking gives 1 to the smallest value; tied values share the mean of their ranks (fractional
// ranking), so a tie in the simulator is not read as an order.
func ranking(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for k := 0; k < len(idx); {
		e := k
		for e+1 < len(idx) && xs[idx[e+1]] == xs[idx[k]] {
			e++
		}
		for i := k; i <= e; i++ {
			r[idx[i]] = float64(k+e)/2 + 1
		}
		k = e + 1
	}
	return r
}

// spearman is Spearman's rho: Pearson's r of the two rankings (ties at their mean rank).
func spearman(a, b []float64) float64 {
	n := float64(len(a))
	if n < 2 {
		return math.NaN()
	}
	var ma, mb float64
	for i := range a {
		ma, mb = ma+a[i]/n, mb+b[i]/n
	}
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}
