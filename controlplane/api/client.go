package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	cp "github.com/inapack/inapack/controlplane"
)

// Client calls the job API. Its Do is a small JSON-over-HTTP client that the cluster layer's APIs
// reuse.
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

// Do sends body (if not nil) as JSON to path and decodes a 2xx answer into out (if not nil); any
// other answer is an error carrying the body's Error message.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
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
		return fmt.Errorf("API at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		se := &StatusError{Method: method, Path: path, Code: resp.StatusCode, Status: resp.Status}
		var e Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil {
			se.Message = e.Error
		}
		return se
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// StatusError is a non-2xx answer of the API. Callers tell answers apart by Code (IsNotFound,
// IsConflict), never by the text: an error that never reached the server (connection refused,
// a timeout) is no StatusError, whatever its message quotes.
type StatusError struct {
	Method, Path string
	Code         int    // the HTTP status code
	Status       string // e.g. "404 Not Found"
	Message      string // the body's Error, if any
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, e.Status, e.Message)
	}
	return fmt.Sprintf("%s %s: %s", e.Method, e.Path, e.Status)
}

// StatusCode is the HTTP status of the API's answer err carries (0: err is no answer of the API).
func StatusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// IsNotFound: the API answered 404 (an unknown job).
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict: the API answered 409 (a job of that id exists).
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// TrustCA makes the client speak HTTPS to a server whose certificate caFile's CA signed.
func (c *Client) TrustCA(caFile string) error {
	pool, err := CertPool(caFile)
	if err != nil {
		return err
	}
	c.HTTP.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	c.Base = strings.Replace(c.Base, "http://", "https://", 1)
	return nil
}

// Jobs lists the controller's jobs.
func (c *Client) Jobs(ctx context.Context) ([]cp.JobConfig, error) {
	var out []cp.JobConfig
	return out, c.Do(ctx, http.MethodGet, "/v1/jobs", nil, &out)
}

// AddJob installs a job.
func (c *Client) AddJob(ctx context.Context, j cp.JobConfig) error {
	return c.Do(ctx, http.MethodPost, "/v1/jobs", j, nil)
}

// UpdateJob changes a job's priority cap and/or INA switch.
func (c *Client) UpdateJob(ctx context.Context, id int, p JobPatch) error {
	return c.Do(ctx, http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", id), p, nil)
}

// RemoveJob removes a job and frees its slots.
func (c *Client) RemoveJob(ctx context.Context, id int) error {
	return c.Do(ctx, http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", id), nil, nil)
}

// Status returns the switches' status, with the counters the controller read last.
func (c *Client) Status(ctx context.Context) ([]cp.SwitchStatus, error) {
	var out []cp.SwitchStatus
	return out, c.Do(ctx, http.MethodGet, "/v1/status", nil, &out)
}

// FreshStatus is Status with every switch's counters and slots read for this request.
func (c *Client) FreshStatus(ctx context.Context) ([]cp.SwitchStatus, error) {
	var out []cp.SwitchStatus
	return out, c.Do(ctx, http.MethodGet, "/v1/status?fresh=true", nil, &out)
}

// CertPool reads a PEM file of CA certificates, for the clients and servers of the cluster's
// HTTP APIs.
func CertPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	return pool, nil
}
