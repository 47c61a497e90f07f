import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface EmailSignInRow {
  readonly id: string
  readonly email: string
  readonly code_hash: string
  readonly link_token_hash: string
  readonly state_hash: string
  readonly return_to: string
  readonly attempts: number
  readonly created_at: number
  readonly expires_at: number
  readonly closed_at: number | null
  readonly closed_reason: string | null
  /** Set for a code asked through POST /v1/auth/link/email: it links the address to this user. */
  readonly link_user_id: string | null
}

export type CloseReason = "used" | "superseded" | "too_many_attempts" | "not_sent"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Deletes the sign-ins that expired at or before `before` (the hourly sweep, a day on). */
    deleteExpiredBefore: (before: number) =>
      Effect.orDie(sql`DELETE FROM email_sign_ins WHERE expires_at <= ${before}`),
    /** Inserts a new sign-in and supersedes the address's open ones, in one transaction. */
    start: (row: EmailSignInRow) =>
      Effect.gen(function*() {
        yield* sql`UPDATE email_sign_ins SET closed_at = ${row.created_at}, closed_reason = 'superseded'
          WHERE email = ${row.email} AND closed_at IS NULL`
        yield* sql`INSERT INTO email_sign_ins ${sql.insert(row as any)}`
      }).pipe(sql.withTransaction, Effect.orDie),
    /** The address's newest sign-in, open or not: a code of an older one is superseded. */
    latestFor: (email: string) =>
      sql<EmailSignInRow>`SELECT * FROM email_sign_ins WHERE email = ${email}
        ORDER BY created_at DESC, id DESC LIMIT 1`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    findByLinkTokenHash: (hash: string) =>
      sql<EmailSignInRow>`SELECT * FROM email_sign_ins WHERE link_token_hash = ${hash}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    /** Counts a wrong code; returns the attempts made so far. */
    addAttempt: (id: string) =>
      sql<{ attempts: number }>`UPDATE email_sign_ins SET attempts = attempts + 1 WHERE id = ${id}
        RETURNING attempts`.pipe(Effect.map((rows) => rows[0]?.attempts ?? 0), Effect.orDie),
    /** Closes an open sign-in; false when it was already closed (so each is used at most once). */
    close: (id: string, now: number, reason: CloseReason) =>
      sql<{ id: string }>`UPDATE email_sign_ins SET closed_at = ${now}, closed_reason = ${reason}
        WHERE id = ${id} AND closed_at IS NULL RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
  }
})

export class EmailSignInsRepo extends Context.Tag("svc/identity/EmailSignInsRepo")<
  EmailSignInsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(EmailSignInsRepo, make)
}
