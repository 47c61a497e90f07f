/**
 * Figures read when `/metrics` is scraped rather than kept up to date on hot paths: machines by
 * state, operations by kind and status, open mailboxes, queue depths. Each area that owns such a
 * figure registers a reader when its layer is built; the metrics area reads them all at a scrape.
 */
import { Context, Effect, Layer } from "effect"

export interface GaugeReading {
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Gauge {
  /** Prometheus name, `svc_` first. */
  readonly name: string
  readonly help: string
  /** `counter` for a total that only grows (named `_total`); a gauge unless said. */
  readonly type?: "gauge" | "counter" | undefined
  readonly read: Effect.Effect<ReadonlyArray<GaugeReading>>
}

export interface GaugesShape {
  readonly register: (gauge: Gauge) => Effect.Effect<void>
  readonly all: Effect.Effect<ReadonlyArray<Gauge>>
}

export class Gauges extends Context.Tag("svc/kernel/Gauges")<Gauges, GaugesShape>() {
  static readonly layer = Layer.sync(Gauges, () => {
    const registered: Array<Gauge> = []
    return {
      register: (gauge) => Effect.sync(() => void registered.push(gauge)),
      all: Effect.sync(() => [...registered])
    }
  })
}

/** One reading without labels. */
export const single = (value: Effect.Effect<number>): Effect.Effect<ReadonlyArray<GaugeReading>> =>
  Effect.map(value, (n) => [{ labels: {}, value: n }])
