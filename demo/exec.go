package demo

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// execFlags is -exec JOB=COMMAND (repeatable): the job's workers run COMMAND through sh -c in their
// namespaces instead of ina-worker, with their configuration in the environment in the style of
// torch.distributed (RANK, WORLD_SIZE, INAPACK_*; the Python package python/inapack reads them).
// The command prints "worker: ..." lines (progress) and a last "worker-summary: ..." line with
// status=ok, iterations=N and exact=N (results it checked exact) for the demo to pass.
type execFlags map[int]string

func (e execFlags) String() string { return fmt.Sprint(map[int]string(e)) }

func (e execFlags) Set(s string) error {
	id, cmd, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || strings.TrimSpace(cmd) == "" {
		return fmt.Errorf("want JOB=COMMAND, got %q", s)
	}
	e[n] = cmd
	return nil
}

// workerArgv is the command line of job j's worker of rank r on host h.
func (d *demo) workerArgv(j *jobSpec, r int, h host, progress time.Duration) []string {
	if cmd := d.exec[j.id]; cmd != "" {
		return []string{"ip", "netns", "exec", h.name, "env",
			"RANK=" + fmt.Sprint(r), "WORLD_SIZE=" + fmt.Sprint(j.workers), "INAPACK_JOB=" + fmt.Sprint(j.id),
			"INAPACK_IFACE=eth0", "INAPACK_IP=" + h.ip, "INAPACK_PS_IP=" + psIP, "INAPACK_PS_MAC=" + d.ps.mac,
			"INAPACK_PRIORITY=" + fmt.Sprint(j.priority), "INAPACK_MEMBER=" + fmt.Sprint(j.member(r)), "INAPACK_SLOT_BASE=" + fmt.Sprint(j.slotBase),
			"INAPACK_WINDOW=" + fmt.Sprint(j.window), "INAPACK_PROGRESS_TIMEOUT=" + fmt.Sprint(progress.Seconds()),
			"INAPACK_INTEGRITY=" + fmt.Sprint(d.integrity), "sh", "-c", cmd}
	}
	iters := d.iters
	if j.id == d.killJob {
		// The killed job runs until its victim is killed: with -iters alone, a victim with few
		// iterations left can finish before the kill reaches it on a busy machine.
		iters = math.MaxInt32
	}
	argv := []string{"ip", "netns", "exec", h.name, filepath.Join(d.bin, "ina-worker"), "-iface", "eth0",
		"-job", fmt.Sprint(j.id), "-rank", fmt.Sprint(r), "-member", fmt.Sprint(j.member(r)), "-workers", fmt.Sprint(j.workers),
		"-priority", fmt.Sprint(j.priority), "-slot-base", fmt.Sprint(j.slotBase), "-window", fmt.Sprint(j.window),
		"-size", fmt.Sprint(d.size), "-iters", fmt.Sprint(iters), "-compute", d.compute.String(),
		"-seed", fmt.Sprint(d.seed), "-ip", h.ip, "-ps-ip", psIP, "-ps-mac", d.ps.mac, "-progress-timeout", progress.String(), "-dtype", d.dtype,
		"-integrity=" + fmt.Sprint(d.integrity), "-threads", fmt.Sprint(d.threads)}
	if d.trace {
		argv = append(argv, "-trace")
	}
	return argv
}

// execJob is an -exec job id that is not a -job, or 0.
func (d *demo) execJob() int {
	for id := range d.exec {
		if !slices.ContainsFunc(d.jobs, func(j *jobSpec) bool { return j.id == id }) {
			return id
		}
	}
	return 0
}
