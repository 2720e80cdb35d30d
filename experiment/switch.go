package experiment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// chooseSwitch returns the switch to emulate with and, for BMv2, the JSON and P4Info to use. auto
// is the reference switch: BMv2 forwards an order of magnitude fewer packets per second here, so
// it runs only when asked for (SWITCH=bmv2).
func chooseSwitch(kind string) (target, bmv2JSON, p4info string, err error) {
	for _, p := range []string{"build/p4/ina.json", "build/ina.json"} {
		if _, err := os.Stat(p); err == nil {
			bmv2JSON = p
			break
		}
	}
	if bmv2JSON != "" {
		for _, p := range []string{"ina.p4info.txtpb", "ina.p4info.txt"} {
			if q := filepath.Join(filepath.Dir(bmv2JSON), p); fileExists(q) {
				p4info = q
			}
		}
	}
	_, ssErr := exec.LookPath("simple_switch_grpc")
	switch kind {
	case "auto", "", "ref":
		return "ref", "", "", nil
	case "bmv2":
		if ssErr != nil {
			return "", "", "", fmt.Errorf("SWITCH=bmv2 but simple_switch_grpc is not on PATH")
		}
		if bmv2JSON == "" {
			return "", "", "", fmt.Errorf("SWITCH=bmv2 but no compiled program (build/ina.json): run make p4")
		}
		return "bmv2", bmv2JSON, p4info, nil
	}
	return "", "", "", fmt.Errorf("switch %q: want auto, ref or bmv2", kind)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
