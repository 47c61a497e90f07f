/** Shapes shared by several groups. */
import { Schema } from "effect"

export const Timestamp = Schema.String.annotations({ description: "RFC 3339 time", format: "date-time" })
export const NullableTimestamp = Schema.NullOr(Timestamp)
export const Uuid = Schema.UUID

export const iso = (millis: number) => new Date(millis).toISOString()
export const isoOrNull = (millis: number | null) => (millis === null ? null : iso(millis))
