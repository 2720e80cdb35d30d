// Package netpack places training jobs in a cluster whose ToR switches aggregate gradients
// statistically (NetPack, ASPLOS'24): a joint water-filling estimate of links and switch INA capacity,
// a harm-aware machine score, knapsack admission, DP worker placement, PS placement, INA enablement
// and ESA priorities, plus baseline policies behind the same Policy interface.
package netpack
