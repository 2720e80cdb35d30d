package extender

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/controlplane/api"
)

// APIServer lists nodes and pods from a Kubernetes API server over its REST API.
type APIServer struct {
	URL   string // e.g. https://10.96.0.1:443
	Token string // bearer token (a service account's)
	HTTP  *http.Client
}

// Service-account files inside a pod.
const (
	saToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	saCA    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// NewAPIServer returns a source for the API server at url; an empty url means in-cluster (the
// KUBERNETES_SERVICE_HOST/PORT environment and the pod's service account), and empty token and
// CA files mean the service account's.
func NewAPIServer(apiURL, tokenFile, caFile string) (*APIServer, error) {
	inCluster := apiURL == ""
	if inCluster {
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, fmt.Errorf("no --apiserver and not in a pod (KUBERNETES_SERVICE_HOST/PORT unset)")
		}
		apiURL = "https://" + host + ":" + port
		tokenFile, caFile = cmp.Or(tokenFile, saToken), cmp.Or(caFile, saCA)
	}
	s := &APIServer{URL: strings.TrimRight(apiURL, "/"), HTTP: &http.Client{Timeout: 10 * time.Second}}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("API server token: %w", err)
		}
		s.Token = strings.TrimSpace(string(b))
	}
	if caFile != "" {
		pool, err := api.CertPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("API server CA: %w", err)
		}
		s.HTTP.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return s, nil
}

func (s *APIServer) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Nodes implements Source.
func (s *APIServer) Nodes(ctx context.Context) ([]v1.Node, error) {
	var l v1.NodeList
	return l.Items, s.get(ctx, "/api/v1/nodes", &l)
}

// Pods implements Source: every namespace's pods that carry jobLabel.
func (s *APIServer) Pods(ctx context.Context, jobLabel string) ([]v1.Pod, error) {
	var l v1.PodList
	return l.Items, s.get(ctx, "/api/v1/pods?labelSelector="+url.QueryEscape(jobLabel), &l)
}
