package trace

import (
	"bytes"
	"testing"
)

// The loaders must never panic and never return a job that fails validation.
func checkTrace(t *testing.T, tr *Trace, err error) {
	if err != nil {
		return
	}
	for _, j := range tr.Jobs {
		if j.GPUs < 1 || !(j.Duration > 0) || j.Submit < 0 || j.ID == "" {
			t.Fatalf("invalid job accepted: %+v", j)
		}
	}
}

func FuzzLoadCSV(f *testing.F) {
	f.Add([]byte("job_id,submit_time_s,num_gpus,duration_s\na,0,1,5\n"), false)
	f.Add([]byte("a,0,1,5\n\"b,1,2,3\n"), true)
	f.Add([]byte("a,1e400,1,5\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		tr, err := LoadCSV(bytes.NewReader(data), Options{SkipBad: skip})
		checkTrace(t, tr, err)
	})
}

func FuzzLoadPhilly(f *testing.F) {
	f.Add([]byte(phillySample), false)
	f.Add([]byte(`[{"jobid":"a","attempts":[{"detail":[{"gpus":[1]}]}]}]`), true)
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		tr, err := LoadPhilly(bytes.NewReader(data), Options{SkipBad: skip})
		checkTrace(t, tr, err)
	})
}

func FuzzLoadPAI(f *testing.F) {
	f.Add([]byte(paiJobs), []byte(paiTasks), false)
	f.Add([]byte("j,i,u,Terminated,1,2\n"), []byte("j,w,1e300,S,1,2,1,1,1e300,x\n"), true)
	f.Fuzz(func(t *testing.T, jobs, tasks []byte, skip bool) {
		tr, err := LoadPAI(bytes.NewReader(jobs), bytes.NewReader(tasks), Options{SkipBad: skip})
		checkTrace(t, tr, err)
	})
}
