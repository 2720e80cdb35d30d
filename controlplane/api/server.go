// Package api is the controller's HTTP/JSON job lifecycle API for the scheduler, and its client.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	cp "github.com/inapack/inapack/controlplane"
)

// Backend is what the API drives; *controlplane.Controller implements it.
type Backend interface {
	Jobs() []cp.JobConfig
	AddJob(ctx context.Context, j cp.JobConfig) error
	UpdateJob(ctx context.Context, id int, priorityCap *int, ina *bool) error
	RemoveJob(ctx context.Context, id int) error
	Status() []cp.SwitchStatus
	PollAll(ctx context.Context)
}

// JobPatch is the body of PATCH /v1/jobs/{id}; absent fields are left unchanged.
type JobPatch struct {
	PriorityCap *int  `json:"priority_cap,omitempty"`
	INA         *bool `json:"ina,omitempty"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Error string `json:"error"`
}

// Handler serves the API:
//
//	GET    /v1/jobs         list jobs
//	POST   /v1/jobs         add a job (body: a job as in the config's jobs list)
//	GET    /v1/jobs/{id}    one job
//	PATCH  /v1/jobs/{id}    change priority_cap and/or ina
//	DELETE /v1/jobs/{id}    remove the job: its entries and the slots it holds
//	GET    /v1/status       switches, sessions, last counters and slots (?fresh=true: read
//	                        every switch's counters and slots first)
//
// A non-empty token is required as "Authorization: Bearer <token>" on every request.
func Handler(b Backend, token string, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	h := &handler{b: b, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", h.list)
	mux.HandleFunc("POST /v1/jobs", h.add)
	mux.HandleFunc("GET /v1/jobs/{id}", h.get)
	mux.HandleFunc("PATCH /v1/jobs/{id}", h.patch)
	mux.HandleFunc("DELETE /v1/jobs/{id}", h.remove)
	mux.HandleFunc("GET /v1/status", h.status)
	return RequireToken(mux, token, log)
}

// RequireToken wraps next so that every request must carry "Authorization: Bearer <token>";
// an empty token requires nothing.
func RequireToken(next http.Handler, token string, log *slog.Logger) http.Handler {
	if token == "" {
		return next
	}
	if log == nil {
		log = slog.Default()
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			log.Warn("api: unauthorized request", "remote", r.RemoteAddr, "path", r.URL.Path)
			WriteJSON(w, http.StatusUnauthorized, Error{"missing or wrong bearer token"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type handler struct {
	b   Backend
	log *slog.Logger
}

// fail maps controller errors to HTTP codes: bad input 400, unknown job 404, duplicate 409, and a
// switch that could not be written 502 (the change is kept and retried by reconciliation).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusBadGateway
	var verr cp.ValidationError
	switch {
	case errors.As(err, &verr):
		code = http.StatusBadRequest
	case errors.Is(err, cp.ErrUnknownJob):
		code = http.StatusNotFound
	case errors.Is(err, cp.ErrJobExists):
		code = http.StatusConflict
	}
	h.log.Warn("api request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	WriteJSON(w, code, Error{err.Error()})
}

func jobID(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := PathID(r)
	if err != nil {
		WriteJSON(w, http.StatusBadRequest, Error{err.Error()})
		return 0, false
	}
	return id, true
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := DecodeJSON(r, v); err != nil {
		WriteJSON(w, http.StatusBadRequest, Error{err.Error()})
		return false
	}
	return true
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, h.b.Jobs())
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	for _, j := range h.b.Jobs() {
		if j.ID == id {
			WriteJSON(w, http.StatusOK, j)
			return
		}
	}
	h.fail(w, r, fmt.Errorf("%w: %d", cp.ErrUnknownJob, id))
}

func (h *handler) add(w http.ResponseWriter, r *http.Request) {
	var j cp.JobConfig
	if !decode(w, r, &j) {
		return
	}
	if err := h.b.AddJob(r.Context(), j); err != nil {
		h.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, j)
}

func (h *handler) patch(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	var p JobPatch
	if !decode(w, r, &p) {
		return
	}
	if p.PriorityCap == nil && p.INA == nil {
		WriteJSON(w, http.StatusBadRequest, Error{"nothing to change: give priority_cap and/or ina"})
		return
	}
	if err := h.b.UpdateJob(r.Context(), id, p.PriorityCap, p.INA); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if err := h.b.RemoveJob(r.Context(), id); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("fresh"); q != "" {
		fresh, err := strconv.ParseBool(q)
		if err != nil {
			WriteJSON(w, http.StatusBadRequest, Error{fmt.Sprintf("fresh=%q: want true or false", q)})
			return
		}
		if fresh {
			h.b.PollAll(r.Context())
		}
	}
	WriteJSON(w, http.StatusOK, h.b.Status())
}

// CheckExposure refuses a non-loopback listen address unless both a token and TLS are configured.
func CheckExposure(addr, token string, tls bool) error {
	if cp.IsLoopback(addr) {
		return nil
	}
	if token == "" || !tls {
		return fmt.Errorf("api address %s is not loopback: a bearer token (token_file) and TLS (tls.cert, tls.key) are required", addr)
	}
	return nil
}
