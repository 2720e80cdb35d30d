package extender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/extender"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// FuzzExtender posts any body to /filter, /prioritize and /bind, as kube-scheduler would with a
// hostile or broken pod: every answer is 200 with a result (an error in its Error field) or 400
// saying what is wrong with the request, never a 5xx or a panic, and the extender still places a
// gang afterwards. The cluster is a fake clientset's (the two-racks nodes and one label gang).
func FuzzExtender(f *testing.F) {
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(f, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(f, err)
	cs := fake.NewClientset()
	for _, n := range nodes {
		_, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		kubetest.Fatal(f, err)
	}
	_, pods := kubetest.Job{Namespace: "default", Name: "g", Workers: 2, GPUsPerWorker: 2, Model: "resnet50"}.Objects()
	for i, p := range pods {
		p.UID = types.UID("uid-" + p.Name)
		pods[i] = p
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(f, err)
	}
	x, err := extender.New(ctx, cs, extender.Config{Model: gang.Config{UplinkGbps: 0.02, INAMemoryBytes: 16384, RTT: time.Millisecond},
		GangTimeout: time.Millisecond}, slog.New(slog.DiscardHandler))
	kubetest.Fatal(f, err)
	h := x.Handler()
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	good, _ := json.Marshal(map[string]any{"Pod": pods[1], "NodeNames": names})
	for _, b := range [][]byte{good, []byte(`{}`), []byte(`null`), []byte(`{"Pod": null}`), []byte(`{"Pod": {}}`), []byte(`{"Pod": 7}`), []byte(`[`),
		[]byte(`{"Pod": {"metadata": {"labels": {"inapack.io/job": "x"}, "annotations": {"inapack.io/min-count": "-3"}}}, "NodeNames": ["h1"]}`),
		[]byte(`{"Pod": {"metadata": {"labels": {"inapack.io/job": "x"}}}, "NodeNames": ["` + strings.Repeat("n", 1<<16) + `"]}`),
		[]byte(`{"PodName": "g-ps", "PodNamespace": "default", "PodUID": "nope", "Node": "h1"}`),
	} {
		for _, verb := range []string{"filter", "prioritize", "bind"} {
			f.Add(verb, b)
		}
	}
	f.Fuzz(func(t *testing.T, verb string, body []byte) {
		path := "/" + verb
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		switch {
		case rec.Code == http.StatusNotFound && verb != "filter" && verb != "prioritize" && verb != "bind":
		case rec.Code == http.StatusBadRequest:
			if strings.TrimSpace(rec.Body.String()) == "" {
				t.Fatalf("%s %.200q: 400 without saying why", path, body)
			}
		case rec.Code != http.StatusOK:
			t.Fatalf("%s %.200q: %d %s", path, body, rec.Code, rec.Body.String())
		case !json.Valid(rec.Body.Bytes()):
			t.Fatalf("%s %.200q: 200 with %q", path, body, rec.Body.String())
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/filter", bytes.NewReader(good)))
		if want := fmt.Sprintf("NetPack places pod %s", pods[1].Name); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("after %s %.200q the extender answers a gang's pod with %d %s", path, body, rec.Code, rec.Body.String())
		}
	})
}
