// Package kueue (a test only) runs Kueue in front of NetPack on a live control plane: Kueue's
// own controller manager admits gangs through a LocalQueue and assigns them racks and hosts of
// its Topology; ina-kube-scheduler places them and the operator programs the switches.
package kueue
