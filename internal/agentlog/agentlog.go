// Package agentlog reads the lines the agents print ("worker: ...", "worker-summary: ...",
// "ps: ..."): a prefix, then key=value fields.
package agentlog

import "regexp"

var kv = regexp.MustCompile(`(\w+)=(\S+)`)

// Fields are the key=value pairs of a line; a value runs to the next space.
func Fields(line string) map[string]string {
	m := map[string]string{}
	for _, s := range kv.FindAllStringSubmatch(line, -1) {
		m[s[1]] = s[2]
	}
	return m
}
