package scheduler

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/inapack/inapack/internal/agentlog"
)

// The agents are cmd/ina-ps and cmd/ina-worker; these are their command lines and the lines of
// their output the scheduler reads.

// hostAddr is a topology host's IPv4 address (without prefix length) and MAC.
func (c *Cluster) hostAddr(host string) (ip, mac string) {
	h := c.Topo.Hosts[host]
	if p, err := netip.ParsePrefix(h.IP); err == nil {
		ip = p.Addr().String()
	}
	return ip, h.MAC
}

// psArgv is the PS's command line: the job's id on the wire (its switch id, or the scheduler id
// for a job that uses no switch), all its workers, its window; the host interface and, with a
// local worker, the private link.
func (s *Service) psArgv(j *Job, switchJob int, local bool) []string {
	p := j.Placement
	ip, mac := s.cfg.Cluster.hostAddr(p.PS)
	argv := []string{filepath.Join(s.cfg.Bin, "ina-ps"), "-ip", ip, "-mac", mac,
		"-job", fmt.Sprintf("%d:%d:%d", switchJob, len(p.Workers), p.Window),
		"-integrity=" + strconv.FormatBool(!j.NoIntegrity), "-stats", "1s"}
	if p.SwitchJob != 0 {
		argv = append(argv, "-iface", s.cfg.Hosts[p.PS].iface())
	}
	argv = append(argv, s.threadsArg(p.Window)...)
	if local {
		lp, _ := LocalLink(j.ID)
		argv = append(argv, "-iface", lp)
	}
	return argv
}

func (s *Service) workerArgv(j *Job, w PlacedWorker, switchJob int) []string {
	p := j.Placement
	ip, _ := s.cfg.Cluster.hostAddr(w.Host)
	psIP, psMAC := s.cfg.Cluster.hostAddr(p.PS)
	iface := s.cfg.Hosts[w.Host].iface()
	if w.Local {
		_, iface = LocalLink(j.ID)
	}
	argv := []string{filepath.Join(s.cfg.Bin, "ina-worker"), "-iface", iface,
		"-job", strconv.Itoa(switchJob), "-rank", strconv.Itoa(w.Rank), "-workers", strconv.Itoa(len(p.Workers)),
		"-priority", strconv.Itoa(p.PriorityCap), "-slot-base", strconv.Itoa(p.SlotBase), "-window", strconv.Itoa(p.Window),
		"-size", strconv.Itoa(j.values()), "-iters", strconv.Itoa(j.Iterations),
		"-compute", time.Duration(j.Model.ComputeSec * float64(time.Second)).String(),
		"-seed", strconv.FormatUint(s.cfg.Seed+uint64(j.ID), 10), "-ip", ip, "-ps-ip", psIP, "-ps-mac", psMAC,
		"-progress-timeout", s.cfg.ProgressTimeout.String(), "-integrity=" + strconv.FormatBool(!j.NoIntegrity)}
	return append(argv, s.threadsArg(p.Window)...)
}

// threadsArg is the agents' -threads for a job of window slots (Config.Threads): none when the
// agents choose, else the largest power of two up to Threads dividing the window (a worker's
// threads split the window), the same for the PS so that a job's agents match.
func (s *Service) threadsArg(window int) []string {
	if s.cfg.Threads <= 0 {
		return nil
	}
	n := 1
	for 2*n <= s.cfg.Threads && window%(2*n) == 0 {
		n *= 2
	}
	return []string{"-threads", strconv.Itoa(n)}
}

// agentLog is what one agent's output said so far.
type agentLog struct {
	offset   int64 // bytes of the log read
	partial  string
	ready    bool // PS: serving
	iters    int  // worker: iterations reported
	exact    int
	wrong    int
	lastMbps float64
	summary  map[string]string // worker-summary fields, once printed
	corrupt  int               // PS: corrupted packets caught, as of its latest report
	errLine  string            // worker-error, or the last line that is not an iteration
}

func (a *agentLog) line(l string) {
	switch {
	case strings.HasPrefix(l, "worker: "):
		m := agentlog.Fields(l)
		a.iters++
		a.lastMbps, _ = strconv.ParseFloat(m["goodput_mbps"], 64)
		if m["result"] == "exact" {
			a.exact++
		} else {
			a.wrong++
		}
	case strings.HasPrefix(l, "worker-summary: "):
		a.summary = agentlog.Fields(l)
	case strings.HasPrefix(l, "worker-error: "):
		a.errLine = strings.TrimPrefix(l, "worker-error: ")
	case strings.HasPrefix(l, "ina-ps: serving"):
		a.ready = true
	case strings.HasPrefix(l, "ps: job="):
		m := agentlog.Fields(l)
		dropped, _ := strconv.Atoi(m["corrupt"])            // exact-path copies
		redirected, _ := strconv.Atoi(m["corrupt_results"]) // sums
		a.corrupt = dropped + redirected
	case strings.HasPrefix(l, "#"), strings.HasPrefix(l, "ps: "), l == "":
	default:
		if a.errLine == "" || a.summary == nil {
			a.errLine = l
		}
	}
}

// feed parses the complete lines of b.
func (a *agentLog) feed(b []byte) {
	a.offset += int64(len(b))
	text := a.partial + string(b)
	lines := strings.Split(text, "\n")
	a.partial = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		a.line(strings.TrimSpace(l))
	}
}

// verdict of a worker that printed its summary: nil when every iteration was exact.
func (a *agentLog) verdict(iters int) error {
	s := a.summary
	if s["status"] == "ok" && s["iterations"] == strconv.Itoa(iters) && s["exact"] == strconv.Itoa(iters) {
		return nil
	}
	if a.errLine != "" {
		return fmt.Errorf("%s", a.errLine)
	}
	return fmt.Errorf("status=%s, %s of %d iterations exact, %s wrong values", s["status"], s["exact"], iters, s["wrong_values"])
}
