// Package scheduler is the cluster's job scheduler: it places training jobs with NetPack (or a
// baseline), installs their INA entries through the switch controller's job API, runs their
// parameter server and workers on the chosen hosts, follows them to the end and frees what they
// held. See README.md.
package scheduler
