/**
 * HTTP requests by method, route template and status, and their durations as a histogram, kept
 * in plain maps: the edge records every request (RequestEdge.ts), so recording is a map lookup and
 * a few additions, without an Effect metric key made per request. Rendered at the scrape.
 * A path that no API route serves (an unknown path, the pages, /docs) counts as route `unmatched`,
 * so what a client sends cannot grow the series.
 */

/** Upper bounds of the duration buckets, in seconds. */
export const durationBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const

interface Durations {
  readonly method: string
  readonly route: string
  readonly buckets: Array<number>
  count: number
  sum: number
}

const methods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
const requests = new Map<
  string,
  { readonly method: string; readonly route: string; readonly status: number; n: number }
>()
const durations = new Map<string, Durations>()

/** Counts one finished request and its duration. */
export const recordRequest = (method: string, route: string | undefined, status: number, seconds: number) => {
  const m = methods.has(method) ? method : "other"
  const r = route ?? "unmatched"
  const key = `${m} ${r}`
  const counted = `${key} ${status}`
  const found = requests.get(counted)
  if (found === undefined) requests.set(counted, { method: m, route: r, status, n: 1 })
  else found.n++
  let spread = durations.get(key)
  if (spread === undefined) {
    spread = { method: m, route: r, buckets: durationBuckets.map(() => 0), count: 0, sum: 0 }
    durations.set(key, spread)
  }
  spread.count++
  spread.sum += seconds
  for (let i = 0; i < durationBuckets.length; i++) {
    if (seconds <= durationBuckets[i]!) {
      spread.buckets[i]!++
      break
    }
  }
}

const label = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

/** The two families in the Prometheus text format. */
export const httpMetricsText = () => {
  let text = "# HELP svc_http_requests_total HTTP requests answered, by method, route template and status\n" +
    "# TYPE svc_http_requests_total counter\n"
  for (const { method, n, route, status } of requests.values()) {
    text += `svc_http_requests_total{method="${method}",route="${label(route)}",status="${status}"} ${n}\n`
  }
  text += "# HELP svc_http_request_duration_seconds Time from a request's arrival to its answer handed to " +
    "the server, by method and route template\n# TYPE svc_http_request_duration_seconds histogram\n"
  for (const { buckets, count, method, route, sum } of durations.values()) {
    const labels = `method="${method}",route="${label(route)}"`
    let cumulative = 0
    buckets.forEach((n, i) => {
      cumulative += n
      text += `svc_http_request_duration_seconds_bucket{${labels},le="${durationBuckets[i]}"} ${cumulative}\n`
    })
    text += `svc_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${count}\n` +
      `svc_http_request_duration_seconds_sum{${labels}} ${sum}\n` +
      `svc_http_request_duration_seconds_count{${labels}} ${count}\n`
  }
  return text
}
