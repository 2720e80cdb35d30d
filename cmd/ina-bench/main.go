// Command ina-bench measures this machine for make bench (scripts/bench.sh): forwarding rates,
// the all-reduce path's limit, the tail, the table and the comparison
// of two runs. The measurements live in package bench, which documents the subcommands.
package main

import "github.com/inapack/inapack/bench"

func main() { bench.Main() }
