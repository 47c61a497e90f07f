/**
 * The process's own figures, read at the scrape under the names Prometheus client libraries use
 * (`process_*`, `nodejs_*`), so the usual dashboards read them.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"

const startSeconds = Math.round((Date.now() - process.uptime() * 1000) / 1000)

/** The event loop's delay since the last scrape (a sampling timer of Node's, started at the first). */
let loopDelay: ReturnType<typeof monitorEventLoopDelay> | undefined

const family = (name: string, type: "gauge" | "counter", help: string, value: number) =>
  `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${value}\n`

export const processMetricsText = () => {
  if (loopDelay === undefined) {
    loopDelay = monitorEventLoopDelay({ resolution: 20 })
    loopDelay.enable()
  }
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  const delay = loopDelay.count > 0 ? loopDelay.percentile(99) / 1e9 : 0
  loopDelay.reset()
  return [
    family("process_cpu_user_seconds_total", "counter", "User CPU time spent, in seconds", cpu.user / 1e6),
    family("process_cpu_system_seconds_total", "counter", "System CPU time spent, in seconds", cpu.system / 1e6),
    family("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes", memory.rss),
    family("process_start_time_seconds", "gauge", "Start time of the process, seconds since the epoch", startSeconds),
    family("nodejs_heap_used_bytes", "gauge", "V8 heap in use, in bytes", memory.heapUsed),
    family("nodejs_heap_total_bytes", "gauge", "V8 heap allocated, in bytes", memory.heapTotal),
    family(
      "nodejs_external_memory_bytes",
      "gauge",
      "Memory of C++ objects bound to JavaScript, in bytes",
      memory.external
    ),
    family(
      "nodejs_eventloop_delay_p99_seconds",
      "gauge",
      "99th percentile of the event loop's delay since the previous scrape, in seconds",
      delay
    )
  ].join("")
}
