import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { mapPage } from "../kernel/http/Pagination.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import type { WebhookEventType } from "./Events.js"
import type { DeliveryRow, WebhookRow } from "./Repo.js"
import { Webhooks, type WithSecret } from "./Webhooks.js"

/** The secret is never part of an endpoint's DTO. */
const webhookDto = (row: WebhookRow) => ({
  id: row.id,
  organization_id: row.organization_id,
  created_by: row.created_by,
  name: row.name,
  url: row.url,
  enabled: row.enabled === 1,
  events: JSON.parse(row.events) as Array<WebhookEventType>,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  secret_rotated_at: isoOrNull(row.secret_rotated_at)
})

const secretDto = (made: WithSecret) => ({ secret: made.secret, webhook: webhookDto(made.webhook) })

const deliveryDto = (row: DeliveryRow) => ({
  id: row.id,
  event_id: row.event_id,
  event_type: row.event_type as WebhookEventType,
  machine_id: row.machine_id,
  operation_id: row.operation_id,
  status: row.status,
  attempt_count: row.attempt_count,
  created_at: iso(row.created_at),
  delivered_at: isoOrNull(row.delivered_at),
  last_attempt_at: isoOrNull(row.last_attempt_at),
  next_attempt_at: row.status === "pending" ? isoOrNull(row.next_attempt_at) : null,
  last_status_code: row.last_status_code,
  last_error: row.last_error
})

export const WebhooksHandlers = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    const organizationId = Effect.map(currentOrganization, (organization) => organization.id)
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(webhooks.list(org, urlParams.limit, urlParams.cursor), (page) =>
            mapPage(page, webhookDto))))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* currentUser
          return secretDto(yield* webhooks.create(yield* organizationId, user.id, payload))
        }))
      .handle("get", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(webhooks.find(org, path.webhook_id), webhookDto)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(webhooks.update(org, path.webhook_id, payload), webhookDto)))
      .handle("delete", ({ path }) =>
        Effect.asVoid(Effect.flatMap(organizationId, (org) =>
          webhooks.remove(org, path.webhook_id))))
      .handle("rotateSecret", ({ path }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(webhooks.rotate(org, path.webhook_id), secretDto)))
      .handle("deliveries", ({ path, urlParams }) =>
        Effect.flatMap(organizationId, (org) =>
          Effect.map(
            webhooks.deliveries(org, path.webhook_id, urlParams.limit, urlParams.cursor),
            (page) =>
              mapPage(page, deliveryDto)
          )))
  })).pipe(buildWithOnly(Authorization, Webhooks))
