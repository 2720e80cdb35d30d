package controlplane

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descUp         = prometheus.NewDesc("ina_switch_up", "1 while the controller holds a primary session with the switch.", []string{"switch"}, nil)
	descEvents     = prometheus.NewDesc("ina_events_packets_total", "Packets per event (ina_events counter), as last polled.", []string{"switch", "event"}, nil)
	descJobEvents  = prometheus.NewDesc("ina_job_events_packets_total", "Packets per job and event (ina_job_events counter), as last polled.", []string{"switch", "job", "event"}, nil)
	descSlots      = prometheus.NewDesc("ina_job_slots_held", "Aggregator slots the job holds (slot_job == job, slot_count != 0), as last polled.", []string{"switch", "job"}, nil)
	descPushes     = prometheus.NewDesc("ina_pipeline_pushes_total", "Pipeline pushes by the controller.", []string{"switch"}, nil)
	descConnects   = prometheus.NewDesc("ina_switch_connects_total", "Sessions established (a rise means the switch went away and came back).", []string{"switch"}, nil)
	descReconciles = prometheus.NewDesc("ina_reconciles_total", "Reconcile passes.", []string{"switch"}, nil)
	descWritten    = prometheus.NewDesc("ina_entries_written_total", "Entries inserted, modified or deleted by reconcile passes.", []string{"switch"}, nil)
)

// Collector exports the controller's switch state and latest counter snapshots to Prometheus.
// Counter values are the switch's own, read at each poll, so they are exported as constant metrics.
type Collector struct{ c *Controller }

// Collector returns a Prometheus collector for c.
func (c *Controller) Collector() *Collector { return &Collector{c} }

// Describe implements prometheus.Collector.
func (m *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descEvents, descJobEvents, descSlots, descPushes, descConnects, descReconciles, descWritten} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range m.c.Status() {
		up := 0.0
		if s.Connected {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(descPushes, prometheus.CounterValue, float64(s.PipelinePushes), s.Name)
		ch <- prometheus.MustNewConstMetric(descConnects, prometheus.CounterValue, float64(s.Connects), s.Name)
		ch <- prometheus.MustNewConstMetric(descReconciles, prometheus.CounterValue, float64(s.Reconciles), s.Name)
		ch <- prometheus.MustNewConstMetric(descWritten, prometheus.CounterValue, float64(s.EntriesWritten), s.Name)
		snap := s.Snapshot
		if snap == nil {
			continue
		}
		for ev, v := range snap.Events {
			ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(v), s.Name, ev)
		}
		for job, evs := range snap.JobEvents {
			js := strconv.Itoa(job)
			for ev, v := range evs {
				ch <- prometheus.MustNewConstMetric(descJobEvents, prometheus.CounterValue, float64(v), s.Name, js, ev)
			}
			if snap.SlotsHeld != nil {
				ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(snap.SlotsHeld[job]), s.Name, js)
			}
		}
	}
}
