/**
 * The figures kept as they happen (Effect metrics, process-wide): how long accepting a change
 * takes, and how many jobs share each commit. Updating one is a few arithmetic steps, so they may
 * sit on the hot paths; everything else is read at the scrape (Gauges.ts).
 */
import { Metric, MetricBoundaries } from "effect"

/** From the request's arrival to its 202 handed to the server (the commit on disk), in seconds. */
export const acceptSeconds = Metric.histogram(
  "svc_accept_seconds",
  MetricBoundaries.exponential({ start: 0.0005, factor: 2, count: 14 }),
  "Time to accept a change: request in to 202 out, its commit durable"
)

/** Jobs committed together by the group commit. */
export const commitBatchJobs = Metric.histogram(
  "svc_group_commit_batch_jobs",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 10 }),
  "Jobs sharing one group commit"
)
