/**
 * Webhook endpoints (api.md "Webhooks", extensions.md §9, §20): at most 10 per organization, URLs
 * checked by the SSRF guard, signing secrets sealed at rest and shown only by create and rotate.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { Outbound } from "../kernel/http/Outbound.js"
import { paginate } from "../kernel/http/Pagination.js"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"
import { WebhookLimitReached, WebhooksUnavailable } from "./Errors.js"
import type { WebhookEventType } from "./Events.js"
import { type WebhookPatch, type WebhookRow, WebhooksRepo } from "./Repo.js"
import { newSecret } from "./Signature.js"
import { WebhookSender } from "./Worker.js"

/** Endpoints per organization (api.md Limits). */
export const maxEndpoints = 10

const notFound = new ResourceNotFound({ detail: "Webhook endpoint not found" })

export interface NewWebhook {
  readonly name: string
  readonly url: string
  readonly events: ReadonlyArray<WebhookEventType>
  readonly enabled: boolean
}

export interface WebhookChange {
  readonly name?: string | null | undefined
  readonly url?: string | null | undefined
  readonly events?: ReadonlyArray<WebhookEventType> | null | undefined
  readonly enabled?: boolean | null | undefined
}

/** An endpoint with the secret it signs with: only create and rotate answer this. */
export interface WithSecret {
  readonly secret: string
  readonly webhook: WebhookRow
}

const distinct = (events: ReadonlyArray<string>) => JSON.stringify([...new Set(events)])

const make = Effect.gen(function*() {
  const repo = yield* WebhooksRepo
  const box = yield* SecretBox
  const outbound = yield* Outbound
  const config = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const locks = yield* makeRowLocks
  const sender = yield* WebhookSender

  const available = config.secretKeys.kind === "none"
    ? Effect.fail(new WebhooksUnavailable({ detail: "SVC_SECRET_KEYS is none: signing secrets cannot be stored" }))
    : Effect.void

  const checkedUrl = (url: string) =>
    Effect.mapError(outbound.check(url), (unsafe) =>
      new InvalidRequest({
        detail: `The webhook URL is refused: ${unsafe.reason}`,
        field_errors: [{ field: "url", message: unsafe.reason }]
      }))

  const find = (organizationId: string, id: string) =>
    Effect.flatMap(
      repo.find(organizationId, id.toLowerCase()),
      Option.match({ onNone: () => Effect.fail(notFound), onSome: Effect.succeed })
    )

  /** Wakes the sender (an endpoint enabled again has deliveries waiting). */

  return {
    find,
    list: (organizationId: string, limit: number, cursor: string | undefined) =>
      paginate(limit, (n) => repo.list(organizationId, cursor?.toLowerCase() ?? null, n), (row) => row.id),
    create: (organizationId: string, userId: string, body: NewWebhook) =>
      Effect.gen(function*() {
        yield* available
        const url = yield* checkedUrl(body.url)
        const secret = newSecret()
        const sealed = yield* Effect.orDie(box.seal(secret))
        const now = yield* Clock.currentTimeMillis
        const row: WebhookRow = {
          id: uuidv7(now),
          organization_id: organizationId,
          created_by: userId,
          name: body.name,
          url,
          enabled: body.enabled ? 1 : 0,
          events: distinct(body.events),
          sealed_secret: sealed,
          created_at: now,
          updated_at: now,
          secret_rotated_at: null
        }
        yield* sql.withTransaction(Effect.gen(function*() {
          // Creates racing on other nodes count one after another.
          yield* locks.row("organizations", organizationId)
          if ((yield* repo.count(organizationId)) >= maxEndpoints) {
            return yield* new WebhookLimitReached({
              detail: `An organization has at most ${maxEndpoints} webhook endpoints`
            })
          }
          yield* repo.insert(row)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return { secret, webhook: row } satisfies WithSecret
      }),
    update: (organizationId: string, id: string, change: WebhookChange) =>
      Effect.gen(function*() {
        const row = yield* find(organizationId, id)
        const now = yield* Clock.currentTimeMillis
        const patch: { -readonly [K in keyof WebhookPatch]: WebhookPatch[K] } = { updated_at: now }
        if (change.name != null) patch.name = change.name
        if (change.url != null) patch.url = yield* checkedUrl(change.url)
        if (change.events != null) patch.events = distinct(change.events)
        if (change.enabled != null) patch.enabled = change.enabled ? 1 : 0
        yield* repo.update(row.id, patch)
        // What its lane holds was read under the old settings (a URL, enabled): read again.
        yield* sender.forget(row.id)
        return { ...row, ...patch }
      }),
    remove: (organizationId: string, id: string) =>
      Effect.flatMap(
        find(organizationId, id),
        (row) => Effect.zipRight(sql.withTransaction(repo.remove(row.id)).pipe(Effect.orDie), sender.forget(row.id))
      ),
    /** A new secret, at once: the next attempt of every queued delivery signs with it. */
    rotate: (organizationId: string, id: string) =>
      Effect.gen(function*() {
        yield* available
        const row = yield* find(organizationId, id)
        const secret = newSecret()
        const sealed = yield* Effect.orDie(box.seal(secret))
        const now = yield* Clock.currentTimeMillis
        const patch = { sealed_secret: sealed, secret_rotated_at: now, updated_at: now }
        yield* repo.update(row.id, patch)
        // Buffered rows carry the old secret: read again, so retries are signed with the new one.
        yield* sender.forget(row.id)
        return { secret, webhook: { ...row, ...patch } } satisfies WithSecret
      }),
    deliveries: (organizationId: string, id: string, limit: number, cursor: string | undefined) =>
      Effect.flatMap(
        find(organizationId, id),
        (row) => paginate(limit, (n) => repo.deliveries(row.id, cursor?.toLowerCase() ?? null, n), (d) => d.id)
      )
  }
})

export class Webhooks extends Context.Tag("svc/webhooks/Webhooks")<Webhooks, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Webhooks, make)
}
