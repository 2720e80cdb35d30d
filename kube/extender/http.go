package extender

import (
	"encoding/json"
	"io"
	"net/http"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Handler serves the extender protocol: POST /filter, /prioritize and /bind with the arguments as
// kube-scheduler sends them (the paths are the urlPrefix plus filterVerb, prioritizeVerb and
// bindVerb of its KubeSchedulerConfiguration; see README.md).
func (e *Extender) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if e.decode(w, r, &args) {
			writeJSON(w, http.StatusOK, e.Filter(&args))
		}
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if !e.decode(w, r, &args) {
			return
		}
		list, err := e.Prioritize(&args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("POST /bind", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderBindingArgs
		if !e.decode(w, r, &args) {
			return
		}
		res := &extenderv1.ExtenderBindingResult{}
		if err := e.Bind(r.Context(), &args); err != nil {
			res.Error = err.Error()
		}
		writeJSON(w, http.StatusOK, res)
	})
	return mux
}

func (e *Extender) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(v); err != nil {
		e.log.Warn("extender: bad request body", "path", r.URL.Path, "err", err)
		http.Error(w, "bad extender arguments: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
