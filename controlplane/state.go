package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The state file keeps the job list across controller restarts: jobs the scheduler added, changed
// or removed through the API would otherwise be undone by the first reconcile of a restarted
// controller. When the file exists its jobs replace the config's jobs list, which then only seeds
// the first start.

// loadState replaces cfg.Jobs with the state file's jobs, if the file exists, and revalidates.
func loadState(cfg *Config) (bool, error) {
	path := cfg.Controller.StateFile
	if path == "" {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state file: %w", err)
	}
	var jobs []JobConfig
	if err := json.Unmarshal(b, &jobs); err != nil {
		return false, fmt.Errorf("state file %s: %w", path, err)
	}
	cfg.Jobs = jobs
	if err := cfg.Validate(); err != nil {
		return false, fmt.Errorf("state file %s does not fit the config (fix or remove it): %w", path, err)
	}
	return true, nil
}

// saveState writes the job list atomically (temporary file, then rename). c.mu must be held.
func (c *Controller) saveState() error {
	path := c.cfg.Controller.StateFile
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(c.cfg.Jobs, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".inactl-state-*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}
