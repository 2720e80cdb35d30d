// SPDX-License-Identifier: Apache-2.0
// Memory and table sizes shared by the v1model and TNA builds.
#ifndef INA_SIZE_P4
#define INA_SIZE_P4

// Aggregator slots (one entry of every slot_* register each).
#define NUM_SLOTS 1024

#define IPV4_LPM_SIZE     1024
// (job, port) pairs: a job has at most MAX_WORKERS worker ports plus result and transit ports.
#define INA_JOB_SIZE      4096
#define INA_PS_SIZE       MAX_JOBS
// (job, worker bit) pairs: a port toward each worker of each job on the job's result path.
#define INA_UNICAST_SIZE  4096
#define JOB_EVENTS_SIZE   22528 // MAX_JOBS * NUM_EVENTS

#endif // INA_SIZE_P4
