package scheduler

import (
	"context"
	"fmt"
	"net/http"

	"github.com/inapack/inapack/controlplane/api"
)

// Client calls the scheduler's API (the controller API client's JSON-over-HTTP transport, with
// its token and TLS handling).
type Client struct{ http *api.Client }

// NewClient returns a client for the API at base (host:port or URL).
func NewClient(base, token string) *Client { return &Client{api.NewClient(base, token)} }

// TrustCA makes the client speak HTTPS to a server whose certificate caFile's CA signed.
func (c *Client) TrustCA(caFile string) error { return c.http.TrustCA(caFile) }

// Submit queues a job.
func (c *Client) Submit(ctx context.Context, s Submission) (Job, error) {
	var j Job
	return j, c.http.Do(ctx, http.MethodPost, "/v1/jobs", s, &j)
}

// Jobs lists every job.
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var out []Job
	return out, c.http.Do(ctx, http.MethodGet, "/v1/jobs", nil, &out)
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id int) (Job, error) {
	var j Job
	return j, c.http.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/jobs/%d", id), nil, &j)
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, id int) error {
	return c.http.Do(ctx, http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", id), nil, nil)
}

// Cluster returns the machines and the policy.
func (c *Client) Cluster(ctx context.Context) (ClusterInfo, error) {
	var ci ClusterInfo
	return ci, c.http.Do(ctx, http.MethodGet, "/v1/cluster", nil, &ci)
}
