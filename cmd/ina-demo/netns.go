package main

import (
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

// topology is the set of hosts the demo created, for teardown.
type topology struct {
	prefix string
	hosts  []host
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newHost creates namespace prefix-name with eth0 (MAC mac) whose peer prefix+"s"+port is the
// switch's port. No IP address is configured: the agents speak through AF_PACKET, and without an
// address the kernel ignores INA frames instead of answering with ICMP.
func (t *topology) addHost(name string, port int, mac, ip string) (host, error) {
	h := host{name: t.prefix + "-" + name, port: port, link: fmt.Sprintf("%ss%d", t.prefix, port), mac: mac, ip: ip}
	t.hosts = append(t.hosts, h) // registered first, so a half-made host is torn down too
	steps := [][]string{
		{"netns", "add", h.name},
		{"link", "add", h.link, "type", "veth", "peer", "name", h.link + "h"},
		{"link", "set", h.link + "h", "netns", h.name},
		{"-n", h.name, "link", "set", h.link + "h", "name", "eth0"},
		{"-n", h.name, "link", "set", "eth0", "address", mac},
		{"-n", h.name, "link", "set", "eth0", "mtu", "9500"},
		{"link", "set", h.link, "mtu", "9500"},
		{"-n", h.name, "link", "set", "eth0", "up"},
		{"-n", h.name, "link", "set", "lo", "up"},
		{"link", "set", h.link, "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			return h, err
		}
	}
	for _, dev := range []string{"all", "default", "eth0"} {
		_ = exec.Command("ip", "netns", "exec", h.name, "sysctl", "-qw", "net.ipv6.conf."+dev+".disable_ipv6=1").Run()
	}
	_ = exec.Command("sysctl", "-qw", "net.ipv6.conf."+h.link+".disable_ipv6=1").Run()
	return h, nil
}

// teardown deletes every namespace and switch-side link the topology made (deleting a veth end
// deletes its peer).
func (t *topology) teardown() {
	for _, h := range t.hosts {
		_ = exec.Command("ip", "link", "del", h.link).Run()
		_ = exec.Command("ip", "netns", "del", h.name).Run()
	}
	t.hosts = nil
}

// cleanStale removes namespaces and links left by an earlier run with the same prefix that was
// killed before it could tear down.
func cleanStale(prefix string) {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, prefix+"s") && isDigits(strings.TrimPrefix(name, prefix+"s")) {
			_ = exec.Command("ip", "link", "del", name).Run()
		}
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isRoot() bool { return os.Geteuid() == 0 }
