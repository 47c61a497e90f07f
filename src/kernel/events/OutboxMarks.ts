/**
 * What an outbox recorder tells its sender: rows were written to its outbox (named by the area,
 * `webhooks` or `alerts`) since the sender was last woken. The bus hands a sender only the events
 * that come with its mark (`whenMarked`), so the events that concern nobody (nearly every
 * operation) cost the senders nothing, not even a wake. A mark left by a transaction that rolled
 * back costs one look at the table; the table stays the truth (a sender also looks at its start
 * and at its retries' times).
 */
import { Context, Layer } from "effect"
import type { DomainEvent } from "./DomainEvents.js"

export interface OutboxMarksShape {
  /** Set by a recorder inside the transaction that wrote to `outbox`. */
  readonly mark: (outbox: string) => void
  /**
   * A sender's bus filter: the events `accepts` takes that arrive with `outbox` written to since the
   * last such event (clearing the mark), so the bus wakes the sender for nothing else.
   */
  readonly whenMarked: (outbox: string, accepts: (event: DomainEvent) => boolean) => (event: DomainEvent) => boolean
}

export class OutboxMarks extends Context.Tag("svc/kernel/events/OutboxMarks")<OutboxMarks, OutboxMarksShape>() {
  static readonly layer = Layer.sync(OutboxMarks, () => {
    const marked = new Set<string>()
    return {
      mark: (outbox) => void marked.add(outbox),
      whenMarked: (outbox, accepts) => (event) => accepts(event) && marked.delete(outbox)
    }
  })
}
