// Package extender is NetPack as a kube-scheduler extender, for clusters that keep the stock
// scheduler: filter, prioritize and bind over HTTP. It decides with the same gang package as the
// NetPack plugin: a gang (PodGroup, or inapack.io/job label with a min-count) is planned whole at
// its first pod and each pod is held to that plan; a gang that cannot be placed whole gets no
// node for any pod; the bind waits until every pod of the gang has reached it (all pods or none)
// and, like the plugin's PreBind, for the operator to have installed the gang. See README.md.
package extender
