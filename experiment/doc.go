// Package experiment runs experiments on emulated clusters (emu) through the scheduler service:
// the demo (a trace under NetPack and a baseline, JCTs beside the simulator's) and the validation
// (job mixes on fixed placements, measured against the estimator's and the simulator's predictions).
// Each entry point takes the command line of its ina-cluster subcommand; all need root.
package experiment
