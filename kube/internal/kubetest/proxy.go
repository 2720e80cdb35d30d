package kubetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Proxy is one component's way to the API server: a plain-HTTP loopback endpoint that forwards
// each request with a client config's credentials (TLS, token, impersonation). The test cuts the
// component off with it (a crashed process: nothing it sends arrives any more, its watches end)
// or holds some of its requests.
type Proxy struct {
	URL        string
	Kubeconfig string // a kubeconfig file for the proxy, for components that read one
	cut        chan struct{}
	cutOnce    sync.Once
}

// StartProxy starts a proxy to the API server as rc. hold (nil: none) picks requests the proxy
// keeps without an answer until the proxy is cut (then they fail): a request the component sent
// that never arrived.
func StartProxy(t testing.TB, rc *rest.Config, hold func(*http.Request) bool) *Proxy {
	t.Helper()
	target, err := url.Parse(rc.Host)
	Fatal(t, err)
	rt, err := rest.TransportFor(rc)
	Fatal(t, err)
	p := &Proxy{cut: make(chan struct{})}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, Transport: rt, FlushInterval: -1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-p.cut:
			http.Error(w, "cut off by the test", http.StatusServiceUnavailable)
			return
		default:
		}
		if hold != nil && hold(r) {
			select {
			case <-p.cut:
			case <-r.Context().Done():
			}
			http.Error(w, "cut off by the test", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-p.cut:
				cancel() // a watch in flight ends with the cut
			case <-ctx.Done():
			}
		}()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(p.Cut)
	p.URL = srv.URL
	p.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-proxy")
	Fatal(t, WriteKubeconfig(p.Config(), p.Kubeconfig))
	return p
}

// Config is a client config for the proxy (it adds the credentials itself).
func (p *Proxy) Config() *rest.Config { return &rest.Config{Host: p.URL, QPS: 200, Burst: 400} }

// Cut ends every request through the proxy, now and later.
func (p *Proxy) Cut() { p.cutOnce.Do(func() { close(p.cut) }) }
