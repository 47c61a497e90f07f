/**
 * What an outbox recorder tells its sender: rows were written to its outbox (named by the area,
 * `webhooks` or `alerts`) since the sender last took the mark. A sender woken by the bus looks at
 * its table only then, so the events that concern nobody (nearly every operation) cost the senders
 * nothing. A mark left by a transaction that rolled back costs one look at the table; the table
 * stays the truth (a sender also looks at its start and at its retries' times).
 */
import { Context, Layer } from "effect"

export interface OutboxMarksShape {
  /** Set by a recorder inside the transaction that wrote to `outbox`. */
  readonly mark: (outbox: string) => void
  /** Whether `outbox` was written to since the last take; clears the mark. */
  readonly take: (outbox: string) => boolean
}

export class OutboxMarks extends Context.Tag("svc/kernel/events/OutboxMarks")<OutboxMarks, OutboxMarksShape>() {
  static readonly layer = Layer.sync(OutboxMarks, () => {
    const marked = new Set<string>()
    return {
      mark: (outbox) => void marked.add(outbox),
      take: (outbox) => marked.delete(outbox)
    }
  })
}
