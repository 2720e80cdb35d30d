package controlplane

import (
	"net"
	"strings"
)

// IsLoopback reports whether addr (host:port) names only a loopback interface, so that traffic to
// or from it never leaves the machine.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLocalTarget reports whether a gRPC target (host:port, with an optional dns:/// or
// passthrough:/// scheme, or a unix socket) stays on this machine.
func isLocalTarget(target string) bool {
	if strings.HasPrefix(target, "unix:") {
		return true
	}
	for _, scheme := range []string{"dns:///", "passthrough:///"} {
		target = strings.TrimPrefix(target, scheme)
	}
	return IsLoopback(target)
}
