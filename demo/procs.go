package demo

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/inapack/inapack/internal/procs"
)

// demoProcs tracks every child the demo started, to stop them on exit.
type demoProcs struct {
	mu    sync.Mutex
	all   []*procs.Proc
	dir   string
	trace bool
	owned *ledger // records every child, so a later run can remove them if this one is killed
}

// start runs argv as name, its output in <dir>/<name>.log, each line also handed to onLine (and
// printed with -trace). Children are killed with the demo.
func (ps *demoProcs) start(name string, onLine func(string), argv ...string) (*procs.Proc, error) {
	p, err := procs.Start(name, filepath.Join(ps.dir, name+".log"), procs.Options{KillWithParent: true,
		OnLine: func(line string) {
			if ps.trace {
				fmt.Printf("[%s] %s\n", name, line)
			}
			if onLine != nil {
				onLine(line)
			}
		}}, argv...)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	if ps.owned != nil {
		ps.owned.addProc(name, p.Cmd.Process.Pid)
	}
	return p, nil
}

func (ps *demoProcs) stopAll() {
	ps.mu.Lock()
	all := ps.all
	ps.all = nil
	ps.mu.Unlock()
	for i := len(all) - 1; i >= 0; i-- {
		all[i].Stop(3 * time.Second)
	}
}
