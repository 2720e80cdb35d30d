// Package extender is a kube-scheduler extender (filter and prioritize) that places the pods of an
// INA training job where NetPack would place the job, using the scheduler's placement code.
// See README.md.
package extender
