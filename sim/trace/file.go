package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Format names a trace file format.
type Format string

// Known formats; FormatAuto picks one from the file name.
const (
	FormatAuto   Format = "auto"
	FormatCSV    Format = "csv"
	FormatPhilly Format = "philly"
	FormatPAI    Format = "pai"
)

// DetectFormat guesses the format from a file name: *.json is Philly's cluster_job_log, a name
// containing pai_job_table is Alibaba PAI, anything else the project CSV.
func DetectFormat(path string) Format {
	base := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(base, ".json") || strings.Contains(base, "cluster_job_log"):
		return FormatPhilly
	case strings.Contains(base, "pai_job_table"):
		return FormatPAI
	}
	return FormatCSV
}

// LoadFile opens and parses a trace. paiTasks optionally names a PAI task table (GPU counts).
func LoadFile(path string, f Format, paiTasks string, opt Options) (*Trace, error) {
	if f == "" || f == FormatAuto {
		f = DetectFormat(path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var t *Trace
	switch f {
	case FormatCSV:
		t, err = LoadCSV(fh, opt)
	case FormatPhilly:
		t, err = LoadPhilly(fh, opt)
	case FormatPAI:
		if paiTasks == "" {
			t, err = LoadPAI(fh, nil, opt)
			break
		}
		th, terr := os.Open(paiTasks)
		if terr != nil {
			return nil, terr
		}
		defer th.Close()
		t, err = LoadPAI(fh, th, opt)
	default:
		return nil, fmt.Errorf("unknown trace format %q (want csv, philly or pai)", f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
