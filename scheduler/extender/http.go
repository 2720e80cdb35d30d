package extender

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Handler serves the extender protocol: POST /filter and POST /prioritize with ExtenderArgs as
// kube-scheduler sends them (the paths are the urlPrefix plus filterVerb and prioritizeVerb of
// the KubeSchedulerConfiguration; see README.md).
func (e *Extender) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if !e.decode(w, r, &args) {
			return
		}
		writeJSON(w, http.StatusOK, e.Filter(r.Context(), &args))
	})
	mux.HandleFunc("POST /prioritize", func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if !e.decode(w, r, &args) {
			return
		}
		list, err := e.Prioritize(r.Context(), &args)
		if err != nil {
			// kube-scheduler treats an error as the extender failing the cycle (or ignores it if
			// the extender is ignorable); the message is in the body and the log.
			code := http.StatusInternalServerError
			if errors.As(err, new(badRequest)) {
				code = http.StatusBadRequest
			}
			e.log.Warn("extender prioritize failed", "code", code, "err", err)
			http.Error(w, err.Error(), code)
			return
		}
		writeJSON(w, http.StatusOK, list)
	})
	return mux
}

func (e *Extender) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(v); err != nil {
		e.log.Warn("extender: bad request body", "path", r.URL.Path, "err", err)
		http.Error(w, "bad ExtenderArgs: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
