package extender

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzExtender posts any body to /filter and /prioritize, as kube-scheduler would with a hostile
// or broken pod: every answer is 200 with a result (a filter's error in its Error field) or 400
// saying what is wrong with the request, never a 5xx or a panic, and the extender answers the
// testdata request afterwards as before.
func FuzzExtender(f *testing.F) {
	e, _ := newTestExtender(f)
	h := e.Handler()
	good := readJSON(f, "filter-bert-0.json", nil)
	for _, name := range []string{"filter-bert-0.json", "prioritize-bert-0-names.json", "prioritize-no-job.json"} {
		b := readJSON(f, name, nil)
		f.Add(false, b)
		f.Add(true, b)
	}
	swap := func(old, new string) []byte { return []byte(strings.Replace(string(good), old, new, 1)) }
	for _, b := range [][]byte{
		[]byte(`{}`), []byte(`null`), []byte(`{"Pod": null}`), []byte(`{"Pod": {}}`), []byte(`{"Pod": 7}`), []byte(`[`),
		swap(`"inapack.io/job-gpus": "8"`, `"inapack.io/job-gpus": "-8"`),
		swap(`"inapack.io/job-gpus": "8"`, `"inapack.io/job-gpus": "99999999999"`),
		swap(`"inapack.io/job-gpus": "8"`, `"inapack.io/job-gpus": "8", "inapack.io/model": "gpt-17"`),
		[]byte(`{"Pod": {"metadata": {"labels": {"inapack.io/job": "x"}}}, "NodeNames": ["` + strings.Repeat("n", 1<<16) + `"]}`),
	} {
		f.Add(false, b)
		f.Add(true, b)
	}
	f.Fuzz(func(t *testing.T, prioritize bool, body []byte) {
		path := "/filter"
		if prioritize {
			path = "/prioritize"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		switch {
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
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "NetPack places job") {
			t.Fatalf("after %s %.200q the extender answers the testdata request with %d %s", path, body, rec.Code, rec.Body.String())
		}
	})
}
