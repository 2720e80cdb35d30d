package refswitch

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
)

// liveFaults are fault rates changed while the switch runs (Config.FaultAPI: PUT /faults on the
// stats address). Chaos runs turn loss, duplication, reordering and corruption on for a burst and off again
// mid-job, which the start-time flags cannot.
type liveFaults struct{ cur atomic.Pointer[FaultConfig] }

func newLiveFaults(initial FaultConfig) *liveFaults {
	l := &liveFaults{}
	l.cur.Store(&initial)
	return l
}

// maxFaultBody bounds a PUT /faults body: a FaultConfig is a few dozen bytes.
const maxFaultBody = 4096

// handler serves GET /faults (the rates in force) and PUT /faults (new rates, a FaultConfig as
// JSON: {"loss": 1, "seed": 7}; fields left out are zero). Every port switches to the new rates at
// its next frame, its generator re-seeded from (seed, port).
func (l *liveFaults) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		writeFaults(w, http.StatusOK, *l.cur.Load())
	})
	mux.HandleFunc("PUT /faults", func(w http.ResponseWriter, r *http.Request) {
		var c FaultConfig
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFaultBody))
		dec.DisallowUnknownFields()
		err := dec.Decode(&c)
		if err == nil && dec.More() {
			err = fmt.Errorf("more than one JSON value")
		}
		if err == nil {
			err = c.validate()
		}
		if err != nil {
			http.Error(w, "PUT /faults: "+err.Error(), http.StatusBadRequest)
			return
		}
		l.cur.Store(&c)
		writeFaults(w, http.StatusOK, c)
	})
}

func writeFaults(w http.ResponseWriter, code int, c FaultConfig) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(c)
}

// follow makes in use the rates in force, re-seeding when they changed since its last frame.
// Only the port's writer calls it, before each frame: one atomic load when nothing changed.
func (in *injector) follow(l *liveFaults, port uint16) {
	c := l.cur.Load()
	if c == in.seen {
		return
	}
	in.seen, in.cfg = c, *c
	in.rng = rand.New(rand.NewPCG(c.Seed, uint64(port)))
	in.corrupt = rand.New(rand.NewPCG(c.Seed, corruptStream|uint64(port)))
}
