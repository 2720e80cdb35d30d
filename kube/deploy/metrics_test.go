package deploy_test

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
)

// freePorts are n distinct loopback ports free now, for components that bind them themselves.
// They lie below the kernel's ephemeral range (ip_local_port_range): a port the kernel handed out
// and the test closed again could be taken, before the component binds it, by any outgoing
// connection of the API server, the components and their clients, which take theirs from there.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	const low = 10000  // clear of the well-known and the usual registered ports
	ephemeral := 32768 // Linux's default start of the range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > low+n {
				ephemeral = v
			}
		}
	}
	var ports []int
	for range 1000 {
		p := low + rand.IntN(ephemeral-low)
		if slices.Contains(ports, p) {
			continue
		}
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			if ports = append(ports, p); len(ports) == n {
				return ports
			}
		}
	}
	t.Fatalf("no %d free loopback ports in %d-%d", n, low, ephemeral-1)
	return nil
}

// podAnnotations are a Deployment's pod template annotations.
func podAnnotations(t *testing.T, c *cluster, name string) map[string]string {
	t.Helper()
	d := find(c.objs, "Deployment", name)
	if d == nil {
		t.Fatalf("deploy/ renders no Deployment %s", name)
	}
	a, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
	return a
}

// TestMetricsScrapedAsShipped: Prometheus scrapes both components as deploy/ says (the pods'
// prometheus.io annotations: HTTPS, port, path), with the token of a ServiceAccount bound to
// ClusterRole inapack:metrics-reader: ina-kube-scheduler's secure port and the operator's
// --metrics-secure server (run as their ServiceAccounts, on loopback ports here) each answer with
// their inapack_* metrics, and these move as a gang goes through (planned, bound; installed, the
// switch controller's adds, removed). A scrape without a token, or with the token of an account
// without the role, is refused.
func TestMetricsScrapedAsShipped(t *testing.T) {
	c := deployed(t)
	ctx := c.ctx
	ports := freePorts(t, 2)
	schedPort, opPort := ports[0], ports[1]
	for name, port := range map[string]int{"ina-kube-scheduler": 10259, "ina-operator": 8443} {
		a := podAnnotations(t, c, name)
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/scheme"] != "https" || a["prometheus.io/port"] != strconv.Itoa(port) ||
			a["prometheus.io/path"] != "/metrics" {
			t.Errorf("Deployment %s: pod annotations %v, want Prometheus to scrape https :%d/metrics", name, a, port)
		}
	}
	d := find(c.objs, "Deployment", "ina-operator")
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args := strings.Join(func() []string {
		cmd, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "command")
		return cmd
	}(), " ")
	if !strings.Contains(args, "--metrics-bind-address=:8443") || !strings.Contains(args, "--metrics-secure") {
		t.Errorf("ina-operator's command %q: want its metrics on :8443, served securely", args)
	}

	kc := c.api.KubeconfigAs(t, "inapack-system", "ina-kube-scheduler")
	s := kubetest.StartElectedSchedulerServing(ctx, t, c.schedulerConfig(t, kc, 0), schedPort, kc, app.WithPlugin(plugin.Name, plugin.New))
	o, err := operator.Start(ctx, c.api.As("inapack-system", "ina-operator"), operator.Config{Controller: c.sc.Client,
		Topology: types.NamespacedName{Namespace: "inapack-system", Name: "inapack-topology"}, LeaderElection: true,
		LeaderElectionNamespace: "inapack-system", SyncInterval: time.Second, MaxRetryDelay: time.Second,
		MetricsBindAddress: "127.0.0.1:" + strconv.Itoa(opPort), MetricsSecure: true})
	kubetest.Fatal(t, err)
	defer o.Stop()
	<-s.Leading()

	// Prometheus's account, bound to the shipped role, and one without it.
	_, err = c.api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	token := map[string]string{}
	for _, sa := range []string{"prometheus", "nobody"} {
		_, err := c.api.Client.CoreV1().ServiceAccounts("monitoring").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
		tr, err := c.api.Client.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
		token[sa] = tr.Status.Token
	}
	_, err = c.api.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus:inapack-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "inapack:metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)

	// The components' certificates are self-signed; Prometheus is configured likewise
	// (insecure_skip_verify) or given their CA.
	client := func(tok string) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		if tok == "" {
			return &http.Client{Transport: tr, Timeout: 10 * time.Second}
		}
		return &http.Client{Transport: bearer{tok, tr}, Timeout: 10 * time.Second}
	}
	urls := map[string]string{"scheduler": "https://127.0.0.1:" + strconv.Itoa(schedPort) + "/metrics",
		"operator": "https://127.0.0.1:" + strconv.Itoa(opPort) + "/metrics"}
	scrape := func(who string) kubetest.Metrics {
		t.Helper()
		var m kubetest.Metrics
		c.waitFor(t, who+"'s /metrics", 30*time.Second, func() (bool, string) {
			var err error
			m, err = kubetest.Scrape(ctx, client(token["prometheus"]), urls[who])
			return err == nil, fmt.Sprint(err)
		})
		return m
	}
	for who, u := range urls {
		scrape(who) // served by now
		// kube-scheduler takes a request without a token as anonymous (403), the operator not (401).
		for tok, want := range map[string]string{"": "40[13]", token["nobody"]: "403"} {
			if _, err := kubetest.Scrape(ctx, client(tok), u); err == nil || !regexp.MustCompile(want).MatchString(err.Error()) {
				t.Errorf("%s's /metrics with token %.8q: err %v, want %s", who, tok, err, want)
			}
		}
	}
	sched0, op0 := scrape("scheduler"), scrape("operator")

	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, c.api.Client, j))
	_, err = kubetest.WaitBound(ctx, c.api.Client, j, 90*time.Second)
	kubetest.Fatal(t, err)
	moved := func(who, name string, before kubetest.Metrics, by float64) {
		t.Helper()
		var got float64
		c.waitFor(t, who+" "+name, 20*time.Second, func() (bool, string) {
			got = scrape(who)[name]
			return got >= before[name]+by, ""
		})
		t.Logf("%s: %s %v -> %v", who, name, before[name], got)
	}
	moved("scheduler", "inapack_scheduler_gangs_planned_total", sched0, 1)
	moved("scheduler", "inapack_scheduler_gangs_bound_total", sched0, 1)
	moved("scheduler", "inapack_scheduler_plan_duration_seconds_count", sched0, 1)
	moved("operator", "inapack_operator_gangs_installed_total", op0, 1)
	moved("operator", `inapack_operator_switch_controller_calls_total{operation="add"}`, op0, 1)
	c.finish(t, j)
	moved("operator", "inapack_operator_gangs_removed_total", op0, 1)
}

// bearer adds a bearer token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
