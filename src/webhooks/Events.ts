/** The event types an endpoint may follow (extensions.md §9) and the retry schedule. */
export const webhookEventTypes = [
  "machine.created",
  "machine.ready",
  "machine.stopped",
  "machine.deleted",
  "machine.error",
  "operation.succeeded",
  "operation.failed",
  "snapshot.ready",
  "snapshot.failed",
  "agent.turn_finished"
] as const
export type WebhookEventType = typeof webhookEventTypes[number]

/**
 * The waits before each retry (extensions.md §9): after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h;
 * the attempt after the last wait is the last one: 8 attempts in all, then `failed`.
 */
export const retryDelaysMillis: ReadonlyArray<number> = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000
]

/** After `attempts` failed attempts: when to try again, or undefined when the delivery has failed. */
export const nextAttemptAfter = (attempts: number, now: number): number | undefined => {
  const wait = retryDelaysMillis[attempts - 1]
  return wait === undefined ? undefined : now + wait
}

/** `last_error` keeps at most 1 KiB (extensions.md §20). */
export const truncateError = (text: string) => {
  const bytes = Buffer.from(text, "utf8")
  return bytes.length <= 1024 ? text : bytes.subarray(0, 1024).toString("utf8").replace(/\uFFFD$/, "")
}
