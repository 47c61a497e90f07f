/**
 * The Prometheus text exposition format (version 0.0.4) of Effect's metric snapshot and the
 * gauges read at the scrape.
 */
import { Metric, MetricState, Option } from "effect"
import type { Gauge, GaugeReading } from "./Gauges.js"
import { httpMetricsText } from "./HttpMetrics.js"
import { processMetricsText } from "./ProcessMetrics.js"

export const contentType = "text/plain; version=0.0.4; charset=utf-8"

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const escapeHelp = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

const labelText = (labels: ReadonlyArray<readonly [string, string]>) =>
  labels.length === 0 ? "" : `{${labels.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(",")}}`

const number = (value: number | bigint) =>
  typeof value === "bigint"
    ? value.toString()
    : value === Infinity
    ? "+Inf"
    : value === -Infinity
    ? "-Inf"
    : String(value)

const header = (name: string, type: string, help: string | undefined) =>
  `# HELP ${name} ${escapeHelp(help ?? name)}\n# TYPE ${name} ${type}\n`

/** Effect's metrics (counters, gauges, histograms) of this process. */
const effectMetrics = () => {
  const families = new Map<string, { type: string; help: string | undefined; lines: Array<string> }>()
  const family = (name: string, type: string, help: string | undefined) => {
    const found = families.get(name)
    if (found !== undefined) return found.lines
    const made = { type, help, lines: [] as Array<string> }
    families.set(name, made)
    return made.lines
  }
  for (const pair of Metric.unsafeSnapshot()) {
    const name = pair.metricKey.name
    // Effect's fiber counters (`effect_fiber_*`) stay zero: svc runs without runtime metrics.
    if (name.startsWith("effect_")) continue
    const description = Option.getOrUndefined(pair.metricKey.description)
    const tags = pair.metricKey.tags.map((tag) => [tag.key, tag.value] as const)
    const state = pair.metricState
    if (MetricState.isCounterState(state)) {
      family(name, "counter", description).push(`${name}${labelText(tags)} ${number(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      family(name, "gauge", description).push(`${name}${labelText(tags)} ${number(state.value)}`)
    } else if (MetricState.isHistogramState(state)) {
      const lines = family(name, "histogram", description)
      let sawInfinity = false
      for (const [bound, count] of state.buckets) {
        sawInfinity ||= bound === Infinity
        lines.push(`${name}_bucket${labelText([...tags, ["le", number(bound)]])} ${count}`)
      }
      if (!sawInfinity) lines.push(`${name}_bucket${labelText([...tags, ["le", "+Inf"]])} ${state.count}`)
      lines.push(`${name}_sum${labelText(tags)} ${state.sum}`, `${name}_count${labelText(tags)} ${state.count}`)
    }
  }
  return [...families].map(([name, { help, lines, type }]) => header(name, type, help) + lines.join("\n") + "\n")
}

const gaugeText = (gauge: Gauge, readings: ReadonlyArray<GaugeReading>) =>
  header(gauge.name, gauge.type ?? "gauge", gauge.help) +
  readings.map((reading) => `${gauge.name}${labelText(Object.entries(reading.labels))} ${number(reading.value)}\n`)
    .join("")

/** The whole exposition: the process, HTTP, Effect's metrics, then each gauge with what it read. */
export const render = (gauges: ReadonlyArray<readonly [Gauge, ReadonlyArray<GaugeReading>]>) =>
  [
    processMetricsText(),
    httpMetricsText(),
    ...effectMetrics(),
    ...gauges.map(([gauge, readings]) => gaugeText(gauge, readings))
  ].join("")
