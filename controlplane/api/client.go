package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	cp "github.com/inapack/inapack/controlplane"
)

// Client calls the job API.
type Client struct {
	Base  string // e.g. http://127.0.0.1:9560
	Token string
	HTTP  *http.Client
}

// NewClient returns a client for the API at base.
func NewClient(base, token string) *Client {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{Base: strings.TrimRight(base, "/"), Token: token, HTTP: &http.Client{Timeout: 60 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("controller API at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// Jobs lists the controller's jobs.
func (c *Client) Jobs(ctx context.Context) ([]cp.JobConfig, error) {
	var out []cp.JobConfig
	return out, c.do(ctx, http.MethodGet, "/v1/jobs", nil, &out)
}

// AddJob installs a job.
func (c *Client) AddJob(ctx context.Context, j cp.JobConfig) error {
	return c.do(ctx, http.MethodPost, "/v1/jobs", j, nil)
}

// UpdateJob changes a job's priority cap and/or INA switch.
func (c *Client) UpdateJob(ctx context.Context, id int, p JobPatch) error {
	return c.do(ctx, http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", id), p, nil)
}

// RemoveJob removes a job and frees its slots.
func (c *Client) RemoveJob(ctx context.Context, id int) error {
	return c.do(ctx, http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", id), nil, nil)
}

// Status returns the switches' status.
func (c *Client) Status(ctx context.Context) ([]cp.SwitchStatus, error) {
	var out []cp.SwitchStatus
	return out, c.do(ctx, http.MethodGet, "/v1/status", nil, &out)
}
