// Command ina-demo runs the INA system end to end on one machine in network namespaces: a PS and
// the workers of several jobs, a switch (the reference switch or BMv2), the controller and the
// agents; "demo: OK" only if every all-reduce result was exact. It needs root. The run lives in
// package demo, which documents the flags and the output.
package main

import "github.com/inapack/inapack/demo"

func main() { demo.Main() }
