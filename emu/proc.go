package emu

import (
	"path/filepath"

	"github.com/inapack/inapack/internal/procs"
)

// start runs a switch or controller process of the cluster, its output in Dir/<name>.log.
func (c *Cluster) start(name string, argv ...string) (*procs.Proc, error) {
	p, err := procs.Start(name, filepath.Join(c.cfg.Dir, name+".log"), procs.Options{}, argv...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}
