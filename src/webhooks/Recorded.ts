/**
 * What the outbox recorder tells the sender: deliveries were written since the sender last took
 * the mark. A recorded event wakes the sender only then, so the events of organizations without
 * endpoints (nearly every operation) cost the sender nothing. A mark left by a transaction that
 * rolled back costs one look at the table; the table stays the truth.
 */
import { Context, Layer } from "effect"

export interface RecordedShape {
  /** Set by the recorder inside the transaction that wrote deliveries. */
  mark: () => void
  /** Whether deliveries were written since the last take; clears the mark. */
  take: () => boolean
}

export class RecordedDeliveries extends Context.Tag("svc/webhooks/RecordedDeliveries")<
  RecordedDeliveries,
  RecordedShape
>() {
  static readonly layer = Layer.sync(RecordedDeliveries, () => {
    let marked = false
    return {
      mark: () => void (marked = true),
      take: () => {
        const was = marked
        marked = false
        return was
      }
    }
  })
}
