/** The wait before re-applying an `uncertain` operation: 1 s doubling per attempt, capped at 60 s. */
import { Duration } from "effect"

export const retryCap = Duration.seconds(60)

export const retryDelay = (attempt: number): Duration.Duration =>
  Duration.min(Duration.seconds(2 ** Math.max(0, Math.min(attempt - 1, 10))), retryCap)
