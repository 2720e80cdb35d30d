package trace

import (
	"errors"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestLoadCSV(t *testing.T) {
	in := "job_id,submit_time_s,num_gpus,duration_s\nb,10,8,100\na,0,1,50.5\n\n"
	tr, err := LoadCSV(strings.NewReader(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{"a", 0, 1, 50.5}, {"b", 10, 8, 100}}
	if len(tr.Jobs) != 2 || tr.Jobs[0] != want[0] || tr.Jobs[1] != want[1] {
		t.Fatalf("got %+v, want %+v", tr.Jobs, want)
	}
}

func TestLoadCSVReorderedHeaderAndNoHeader(t *testing.T) {
	tr, err := LoadCSV(strings.NewReader("num_gpus,duration_s,extra,job_id,submit_time_s\n4,9,x,j,3\n"), Options{})
	if err != nil || len(tr.Jobs) != 1 || tr.Jobs[0] != (Job{"j", 3, 4, 9}) {
		t.Fatalf("reordered header: %+v %v", tr, err)
	}
	tr, err = LoadCSV(strings.NewReader("j,3,4,9\n"), Options{})
	if err != nil || len(tr.Jobs) != 1 || tr.Jobs[0] != (Job{"j", 3, 4, 9}) {
		t.Fatalf("no header: %+v %v", tr, err)
	}
}

func TestLoadCSVBadRows(t *testing.T) {
	cases := []struct{ row, field string }{
		{"x,1,0,5", "num_gpus"},
		{"x,1,two,5", "num_gpus"},
		{"x,-1,1,5", "submit_time_s"},
		{"x,1,1,NaN", "duration_s"},
		{"x,1,1,0", "duration_s"},
		{"x,1,1", "duration_s"},
		{",1,1,5", "job_id"},
	}
	for _, c := range cases {
		in := "job_id,submit_time_s,num_gpus,duration_s\nok,0,1,1\n" + c.row + "\nok2,2,1,1\n"
		_, err := LoadCSV(strings.NewReader(in), Options{})
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 3 || pe.Field != c.field {
			t.Errorf("%q: got %v, want line 3 field %s", c.row, err, c.field)
			continue
		}
		if !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%q: message %q lacks the line number", c.row, err)
		}
		tr, err := LoadCSV(strings.NewReader(in), Options{SkipBad: true})
		if err != nil || len(tr.Jobs) != 2 || tr.Skipped != 1 {
			t.Errorf("%q with SkipBad: %+v %v", c.row, tr, err)
		}
	}
}

func TestLoadCSVMissingHeaderColumn(t *testing.T) {
	_, err := LoadCSV(strings.NewReader("job_id,submit_time_s,gpus,duration_s\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "num_gpus") {
		t.Fatalf("got %v", err)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	tr, err := Synthetic(SynthConfig{Jobs: 50, JobsPerHour: 30}, 7)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteCSV(&b, tr.Jobs); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCSV(strings.NewReader(b.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Jobs {
		if back.Jobs[i] != tr.Jobs[i] {
			t.Fatalf("job %d: %+v != %+v", i, back.Jobs[i], tr.Jobs[i])
		}
	}
}

const phillySample = `[
 {"status":"Pass","vc":"v","jobid":"app_2","user":"u","submitted_time":"2017-10-03 05:32:18",
  "attempts":[{"start_time":"2017-10-03 05:32:21","end_time":"2017-10-03 05:36:53",
    "detail":[{"ip":"m1","gpus":["gpu0","gpu1"]},{"ip":"m2","gpus":["gpu0","gpu1"]}]}]},
 {"status":"Pass","jobid":"app_1","submitted_time":"2017-10-03 05:30:00",
  "attempts":[{"start_time":"2017-10-03 05:31:00","end_time":"2017-10-03 05:32:00","detail":[{"ip":"m1","gpus":["gpu3"]}]},
              {"start_time":"2017-10-03 05:40:00","end_time":"2017-10-03 05:41:00","detail":[{"ip":"m3","gpus":["gpu0"]}]}]},
 {"status":"Killed","jobid":"app_3","submitted_time":"2017-10-03 05:33:00","attempts":[]},
 {"status":"Running","jobid":"app_4","submitted_time":"2017-10-03 05:34:00",
  "attempts":[{"start_time":"2017-10-03 05:35:00","end_time":"None","detail":[{"ip":"m1","gpus":["gpu0"]}]}]}
]`

func TestLoadPhilly(t *testing.T) {
	tr, err := LoadPhilly(strings.NewReader(phillySample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{"app_1", 0, 1, 600}, {"app_2", 138, 4, 272}}
	if len(tr.Jobs) != 2 || tr.Jobs[0] != want[0] || tr.Jobs[1] != want[1] || tr.Incomplete != 2 {
		t.Fatalf("got %+v incomplete %d, want %+v and 2", tr.Jobs, tr.Incomplete, want)
	}
}

func TestLoadPhillyBad(t *testing.T) {
	bad := `[{"jobid":"a","submitted_time":"2017-10-03 05:30:00","attempts":[]},
		{"jobid":"b","submitted_time":"yesterday","attempts":[]}]`
	_, err := LoadPhilly(strings.NewReader(bad), Options{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.Field != "submitted_time" {
		t.Fatalf("got %v", err)
	}
	tr, err := LoadPhilly(strings.NewReader(bad), Options{SkipBad: true})
	if err != nil || tr.Skipped != 1 || tr.Incomplete != 1 {
		t.Fatalf("SkipBad: %+v %v", tr, err)
	}
	for _, s := range []string{"", "{}", "[", `[{"jobid":1}]`} {
		if _, err := LoadPhilly(strings.NewReader(s), Options{}); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

const paiJobs = `j1,i1,u,Terminated,1000,1600
j2,i2,u,Failed,1100,1200
j3,i3,u,Terminated,900,1000
j4,i4,u,Running,1200,
j5,i5,u,Terminated,1300,1400
`

const paiTasks = `job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type
j1,worker,4,Terminated,1000,1600,600,30,100,V100
j1,ps,1,Terminated,1000,1600,600,30,,
j3,worker,1,Terminated,900,1000,600,30,50,T4
j5,worker,2,Terminated,1300,1400,600,30,,
`

func TestLoadPAI(t *testing.T) {
	tr, err := LoadPAI(strings.NewReader(paiJobs), strings.NewReader(paiTasks), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{"j3", 0, 1, 100}, {"j1", 100, 4, 600}}
	if len(tr.Jobs) != 2 || tr.Jobs[0] != want[0] || tr.Jobs[1] != want[1] || tr.Incomplete != 3 {
		t.Fatalf("got %+v incomplete %d", tr.Jobs, tr.Incomplete)
	}
	tr, err = LoadPAI(strings.NewReader(paiJobs), nil, Options{})
	if err != nil || len(tr.Jobs) != 3 || tr.Jobs[2].GPUs != 1 {
		t.Fatalf("without tasks: %+v %v", tr, err)
	}
	_, err = LoadPAI(strings.NewReader("j1,i1,u,Terminated,abc,5\n"), nil, Options{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || pe.Field != "start_time" {
		t.Fatalf("bad start: %v", err)
	}
}

func TestDetectFormat(t *testing.T) {
	for in, want := range map[string]Format{"a/cluster_job_log": FormatPhilly, "x.json": FormatPhilly,
		"pai_job_table.csv": FormatPAI, "itp.csv": FormatCSV} {
		if got := DetectFormat(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestSampleFile(t *testing.T) {
	tr, err := LoadFile("testdata/sample.csv", FormatAuto, "", Options{})
	if err != nil || len(tr.Jobs) == 0 {
		t.Fatalf("%v %v", tr, err)
	}
	if _, err := os.Stat("testdata/sample.csv"); err != nil {
		t.Fatal(err)
	}
}

func TestSyntheticCalibration(t *testing.T) {
	const n = 40000
	tr, err := Synthetic(SynthConfig{Jobs: n, TotalGPUs: 512, Load: 0.8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Synthetic(SynthConfig{Jobs: n, TotalGPUs: 512, Load: 0.8}, 1)
	count := map[int]int{}
	gpuTime := map[int]float64{}
	var total float64
	durs := make([]float64, n)
	for i, j := range tr.Jobs {
		if j != again.Jobs[i] {
			t.Fatal("not deterministic under a seed")
		}
		count[j.GPUs]++
		gpuTime[j.GPUs] += float64(j.GPUs) * j.Duration
		total += float64(j.GPUs) * j.Duration
		durs[i] = j.Duration
	}
	for i, s := range itpSizes {
		got := 100 * float64(count[s]) / n
		if math.Abs(got-itpJobShare[i]) > 0.5+0.1*itpJobShare[i] {
			t.Errorf("%d-GPU job share %.2f%%, want %.2f%%", s, got, itpJobShare[i])
		}
	}
	// GPU-time is heavy-tailed; check only the two big buckets loosely.
	if g := 100 * gpuTime[8] / total; g < 35 || g > 65 {
		t.Errorf("8-GPU GPU-time share %.1f%%, want about 49%%", g)
	}
	if g := 100 * gpuTime[1] / total; g < 8 || g > 18 {
		t.Errorf("1-GPU GPU-time share %.1f%%, want about 13%%", g)
	}
	sort.Float64s(durs)
	// 1-GPU jobs are stretched by < 1, larger ones by > 1, so the mixture's median sits near
	// but not on the published one.
	if p50 := durs[n/2]; p50 < 5000 || p50 > 15000 {
		t.Errorf("median duration %.0f s, want near 10,537", p50)
	}
	// Offered load: total GPU-time / (span x GPUs) near 0.8.
	if load := total / (tr.Span() * 512); load < 0.5 || load > 1.2 {
		t.Errorf("offered load %.2f, want about 0.8", load)
	}
}

func TestSyntheticGPUScale(t *testing.T) {
	base, _ := Synthetic(SynthConfig{Jobs: 200, TotalGPUs: 4096, Load: 0.8}, 9)
	big, err := Synthetic(SynthConfig{Jobs: 200, TotalGPUs: 4096, Load: 0.8, GPUScale: 4, MaxGPUs: 128}, 9)
	if err != nil {
		t.Fatal(err)
	}
	for i := range base.Jobs {
		if want := min(4*base.Jobs[i].GPUs, 128); big.Jobs[i].GPUs != want || big.Jobs[i].Duration != base.Jobs[i].Duration {
			t.Fatalf("job %d: %+v, want %d GPUs and duration %v", i, big.Jobs[i], want, base.Jobs[i].Duration)
		}
	}
}

func TestSyntheticErrors(t *testing.T) {
	for _, c := range []SynthConfig{{}, {Jobs: 5}, {Jobs: 5, JobsPerHour: 1, MaxGPUs: -1 + 0}} {
		if c.JobsPerHour > 0 {
			continue
		}
		if _, err := Synthetic(c, 1); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	tr, err := Synthetic(SynthConfig{Jobs: 500, JobsPerHour: 10, MaxGPUs: 8}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range tr.Jobs {
		if j.GPUs > 8 {
			t.Fatalf("job of %d GPUs above MaxGPUs", j.GPUs)
		}
	}
}

// Jittered moves every arrival by at most sec, keeps the jobs (sorted, none before the first
// arrival), is the same for a seed and differs between seeds.
func TestJittered(t *testing.T) {
	tr, err := Synthetic(SynthConfig{Jobs: 200, JobsPerHour: 30}, 7)
	if err != nil {
		t.Fatal(err)
	}
	orig := map[string]float64{}
	for _, j := range tr.Jobs {
		orig[j.ID] = j.Submit
	}
	a, b, c := tr.Jittered(300, 1), tr.Jittered(300, 1), tr.Jittered(300, 2)
	if len(a.Jobs) != len(tr.Jobs) {
		t.Fatalf("%d jobs after jitter, want %d", len(a.Jobs), len(tr.Jobs))
	}
	moved, differ := 0, 0
	for i, j := range a.Jobs {
		if d := math.Abs(j.Submit - orig[j.ID]); d > 300 {
			t.Errorf("job %s moved %v s, more than 300", j.ID, d)
		} else if d > 0 {
			moved++
		}
		if i > 0 && j.Submit < a.Jobs[i-1].Submit || j.Submit < tr.Jobs[0].Submit {
			t.Fatalf("job %s at %v: out of order or before the first arrival", j.ID, j.Submit)
		}
		if j != b.Jobs[i] {
			t.Fatal("the same seed jittered differently")
		}
		if j != c.Jobs[i] {
			differ++
		}
	}
	if moved < len(a.Jobs)/2 || differ == 0 {
		t.Errorf("jitter moved %d of %d jobs, seeds 1 and 2 differ at %d", moved, len(a.Jobs), differ)
	}
	if z := tr.Jittered(0, 1); !slices.Equal(z.Jobs, tr.Jobs) {
		t.Error("jitter 0 changed the trace")
	}
}
