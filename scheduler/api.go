package scheduler

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/inapack/inapack/controlplane/api"
)

// Handler serves the scheduler's HTTP/JSON API:
//
//	POST   /v1/jobs        submit a job (body: Submission) -> 201 Job; 409 if a job of that name has not ended
//	GET    /v1/jobs        every job: placement, state, measured throughput, JCT
//	GET    /v1/jobs/{id}   one job
//	DELETE /v1/jobs/{id}   cancel: a queued job leaves the queue, a running one is stopped -> 204
//	GET    /v1/cluster     the machines with their free GPUs, and the policy
//
// A non-empty token is required as "Authorization: Bearer <token>" (the controller's rule, shared
// through controlplane/api).
func Handler(s *Service, token string, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	h := &handler{s: s, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", h.submit)
	mux.HandleFunc("GET /v1/jobs", h.list)
	mux.HandleFunc("GET /v1/jobs/{id}", h.get)
	mux.HandleFunc("DELETE /v1/jobs/{id}", h.cancel)
	mux.HandleFunc("GET /v1/cluster", h.cluster)
	return api.RequireToken(mux, token, log)
}

// ClusterInfo is the body of GET /v1/cluster.
type ClusterInfo struct {
	Policy   string    `json:"policy"`
	Machines []Machine `json:"machines"`
}

type handler struct {
	s   *Service
	log *slog.Logger
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	h.log.Warn("scheduler API request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	api.WriteJSON(w, code, api.Error{Error: err.Error()})
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	var sub Submission
	if err := api.DecodeJSON(r, &sub); err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	j, err := h.s.Submit(sub)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrDuplicateName) {
			code = http.StatusConflict
		}
		h.fail(w, r, code, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, j)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.s.Jobs())
}

func (h *handler) id(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := api.PathID(r)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return 0, false
	}
	return id, true
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	id, ok := h.id(w, r)
	if !ok {
		return
	}
	j, err := h.s.Job(id)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, j)
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := h.id(w, r)
	if !ok {
		return
	}
	if err := h.s.Cancel(id); err != nil {
		code := http.StatusConflict
		if errors.Is(err, ErrUnknownJob) {
			code = http.StatusNotFound
		}
		h.fail(w, r, code, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) cluster(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, ClusterInfo{Policy: h.s.Policy(), Machines: h.s.Machines()})
}
