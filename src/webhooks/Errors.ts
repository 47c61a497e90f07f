/** The webhooks area's errors (api.md error codes, extensions.md §20). */
import { ProblemError } from "../kernel/http/Problem.js"

export class WebhookLimitReached
  extends ProblemError<WebhookLimitReached>()("webhook_limit_reached", 409, "Webhook endpoint limit reached")
{}

export class WebhooksUnavailable
  extends ProblemError<WebhooksUnavailable>()("webhooks_unavailable", 503, "Webhooks are not available on this server")
{}
