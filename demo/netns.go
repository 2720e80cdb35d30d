package demo

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// host is one network namespace with one interface (eth0) wired to a switch port.
type host struct {
	name string // namespace
	port int    // switch port
	link string // the switch-side veth, in the root namespace
	mac  string
	ip   string
}

// topology is the set of hosts the demo created; the ledger records each namespace and link as it
// is made, for teardown.
type topology struct {
	prefix string
	hosts  []host
	owned  *ledger
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// addHost creates namespace prefix-name with eth0 (MAC mac) whose peer prefix+"s"+port is the
// switch's port. No IP address is configured: the agents speak through AF_PACKET, and without an
// address the kernel ignores INA frames instead of answering with ICMP (makeHosts then has ipdrop
// end them at eth0's ingress, before the IP stack). The namespace and the link are recorded only
// once made, so a name that another run holds ("File exists") is never deleted.
func (t *topology) addHost(name string, port int, mac, ip string) (host, error) {
	h := host{name: t.prefix + "-" + name, port: port, link: fmt.Sprintf("%ss%d", t.prefix, port), mac: mac, ip: ip}
	if err := ipCmd("netns", "add", h.name); err != nil {
		return h, err
	}
	t.owned.addNamespace(h.name)
	if err := ipCmd("link", "add", h.link, "type", "veth", "peer", "name", h.link+"h"); err != nil {
		return h, err
	}
	t.owned.addLink(h.link)
	t.hosts = append(t.hosts, h)
	// Several attributes per ip(8) run, and one sysctl(8) run in the namespace: each run costs
	// milliseconds, every demo sets up all its hosts, and the bench starts dozens of demos.
	steps := [][]string{
		{"link", "set", h.link + "h", "netns", h.name},
		{"-n", h.name, "link", "set", h.link + "h", "name", "eth0", "address", mac, "mtu", "9500", "up"},
		{"-n", h.name, "link", "set", "lo", "up"},
		{"link", "set", h.link, "mtu", "9500", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return h, err
		}
	}
	_ = exec.Command("ip", "netns", "exec", h.name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
		"net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.eth0.disable_ipv6=1").Run()
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+h.link+"/disable_ipv6", []byte("1"), 0o644)
	return h, nil
}

// validPrefix checks a -prefix: the switch-side link prefix+"s"+port+"h" must fit the kernel's
// 15-byte interface names (ports up to 511), and the name must be safe in ip(8) arguments.
func validPrefix(p string) error {
	if p == "" || len(p) > 10 {
		return fmt.Errorf("-prefix %q: want 1 to 10 characters", p)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return fmt.Errorf("-prefix %q: want lower-case letters and digits", p)
		}
	}
	return nil
}

// runPrefix is a prefix unique to this run, so that concurrent runs on one host never share a
// namespace or link name.
func runPrefix() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("ina%02x%02x", b[0], b[1])
}

func isRoot() bool { return os.Geteuid() == 0 }
