package main

import (
	"strings"
	"testing"
)

// TestBadFlags checks that mistakes on the command line are reported before anything starts.
func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-i", "0@rs-no-such-if"}, `interface "rs-no-such-if"`},
		{[]string{"-i", "512@lo"}, "outside 0..511"},
		{[]string{"-i", "1@lo", "-i", "1@lo2"}, "port 1 given twice"},
		{[]string{"-i", "1@lo", "--rate", "2@10"}, "port 2, which has no interface"},
		{[]string{"--rate", "2@fast"}, "Mbit/s"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--grpc-addr", "0.0.0.0:9559"}, "--insecure"},
		{[]string{"--loss", "2"}, "--loss"},
		{[]string{"--token-file", "/nonexistent/token"}, "--token-file"},
		{[]string{"stray"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
