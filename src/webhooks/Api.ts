/** Webhooks (api.md "Webhooks", extensions.md §9, §20): endpoints and their deliveries. */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { NullableTimestamp, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { InvalidRequest, ResourceNotFound } from "../kernel/http/Errors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { policy } from "../kernel/http/Policy.js"
import { WebhookLimitReached, WebhooksUnavailable } from "./Errors.js"
import { webhookEventTypes } from "./Events.js"

export const WebhookEventDto = Schema.Literal(...webhookEventTypes).annotations({ identifier: "WebhookEvent" })

const WebhookName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))
const WebhookUrl = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048))
const WebhookEvents = Schema.Array(WebhookEventDto).pipe(Schema.minItems(1), Schema.maxItems(32))

export const WebhookDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  created_by: Uuid,
  name: Schema.String,
  url: Schema.String,
  enabled: Schema.Boolean,
  events: Schema.Array(WebhookEventDto),
  created_at: Timestamp,
  updated_at: Timestamp,
  secret_rotated_at: NullableTimestamp
}).annotations({ identifier: "Webhook" })

export const WebhookSecretDto = Schema.Struct({
  secret: Schema.String.annotations({ description: "The signing secret (whsec_...): shown only now" }),
  webhook: WebhookDto
}).annotations({ identifier: "WebhookSecret" })

export const WebhookDeliveryDto = Schema.Struct({
  id: Uuid,
  event_id: Uuid,
  event_type: WebhookEventDto,
  machine_id: Schema.NullOr(Uuid),
  operation_id: Schema.NullOr(Uuid),
  status: Schema.Literal("pending", "succeeded", "failed"),
  attempt_count: Schema.Int,
  created_at: Timestamp,
  delivered_at: NullableTimestamp,
  last_attempt_at: NullableTimestamp,
  next_attempt_at: NullableTimestamp,
  last_status_code: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WebhookDelivery" })

const CreateWebhookRequest = RequestBody({
  events: WebhookEvents,
  name: WebhookName,
  url: WebhookUrl,
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

const UpdateWebhookRequest = RequestBody({
  enabled: Schema.optional(Schema.NullOr(Schema.Boolean)),
  events: Schema.optional(Schema.NullOr(WebhookEvents)),
  name: Schema.optional(Schema.NullOr(WebhookName)),
  url: Schema.optional(Schema.NullOr(WebhookUrl))
})

const WebhookPath = Schema.Struct({ webhook_id: Uuid })
const administrators = policy("F", "header", Roles.administrators)

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    Endpoint.get("list", "/v1/webhooks", {
      policy: administrators,
      summary: "List webhook endpoints",
      description: "The organization's webhook endpoints, oldest first, a page at a time. Secrets are never shown here."
    })
      .setUrlParams(Schema.Struct(pageFields(Uuid)))
      .addSuccess(
        Schema.Struct({ items: Schema.Array(WebhookDto), next_cursor: Schema.NullOr(Schema.String) }).annotations({
          identifier: "WebhookPage"
        })
      )
  )
  .add(
    Endpoint.post("create", "/v1/webhooks", {
      policy: administrators,
      summary: "Create a webhook endpoint",
      description:
        "Subscribes an HTTPS endpoint to event types. The URL must be https on port 443, without credentials or a fragment, and name a public host (checked again at every connection; redirects are never followed). The signing secret is answered once, here. An organization has at most 10 endpoints.",
      errors: [WebhookLimitReached, WebhooksUnavailable, InvalidRequest]
    })
      .setPayload(CreateWebhookRequest)
      .addSuccess(WebhookSecretDto, { status: 201 })
  )
  .add(
    Endpoint.get("get", "/v1/webhooks/:webhook_id", {
      policy: administrators,
      errors: [ResourceNotFound],
      summary: "Get a webhook endpoint",
      description: "One endpoint with its event types and state; never its secret."
    })
      .setPath(WebhookPath)
      .addSuccess(WebhookDto)
  )
  .add(
    Endpoint.patch("update", "/v1/webhooks/:webhook_id", {
      policy: administrators,
      summary: "Change a webhook endpoint",
      description:
        "Changes the name, URL, event types or enabled state. A disabled endpoint keeps its deliveries queued until it is enabled again.",
      errors: [ResourceNotFound, InvalidRequest]
    })
      .setPath(WebhookPath)
      .setPayload(UpdateWebhookRequest)
      .addSuccess(WebhookDto)
  )
  .add(
    Endpoint.del("delete", "/v1/webhooks/:webhook_id", {
      policy: administrators,
      errors: [ResourceNotFound],
      summary: "Delete a webhook endpoint",
      description: "Deletes the endpoint with its queued and past deliveries."
    })
      .setPath(WebhookPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .add(
    Endpoint.post("rotateSecret", "/v1/webhooks/:webhook_id/rotate-secret", {
      policy: administrators,
      summary: "Rotate a signing secret",
      description: "Answers a new signing secret; the old one stops signing at once, queued retries included.",
      errors: [ResourceNotFound, WebhooksUnavailable]
    })
      .setPath(WebhookPath)
      .addSuccess(WebhookSecretDto)
  )
  .add(
    Endpoint.get("deliveries", "/v1/webhooks/:webhook_id/deliveries", {
      policy: administrators,
      summary: "List an endpoint's deliveries",
      description:
        "Recent deliveries, newest first, each with its status (pending, succeeded, failed) and last attempt.",
      errors: [ResourceNotFound]
    })
      .setPath(WebhookPath)
      .setUrlParams(Schema.Struct(pageFields(Uuid)))
      .addSuccess(
        Schema.Struct({ items: Schema.Array(WebhookDeliveryDto), next_cursor: Schema.NullOr(Schema.String) })
          .annotations({ identifier: "WebhookDeliveryPage" })
      )
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Webhooks: signed lifecycle events delivered to HTTPS endpoints (Standard Webhooks).")
{}
