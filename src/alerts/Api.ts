/** E-mail alerts (extensions §19): a member's preferences and the one-click unsubscribe link. */
import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { policy } from "../kernel/http/Policy.js"
import { InvalidUnsubscribeToken } from "./Errors.js"
import { alertTypes } from "./Types.js"

export const AlertTypeDto = Schema.Literal(...alertTypes).annotations({ identifier: "AlertType" })

export const NotificationPreferencesDto = Schema.Struct({
  organization_id: Uuid,
  user_id: Uuid,
  email: Schema.String,
  alerts: Schema.Array(Schema.Struct({
    type: AlertTypeDto,
    description: Schema.String,
    available: Schema.Boolean.annotations({
      description: "False when this server cannot send it (mail off, no secret keys, or billing not metered)"
    }),
    enabled: Schema.Boolean,
    default_enabled: Schema.Boolean,
    customized: Schema.Boolean.annotations({ description: "Whether the member chose, rather than the default" })
  }))
}).annotations({ identifier: "NotificationPreferences" })

export const UnsubscribedDto = Schema.Struct({
  organization_id: Uuid,
  type: AlertTypeDto,
  enabled: Schema.Boolean
}).annotations({ identifier: "Unsubscribed" })

const UpdatePreferencesRequest = RequestBody({
  alerts: Schema.partial(Schema.Record({ key: AlertTypeDto, value: Schema.Boolean })).annotations({
    description: `Alert type to on (true) or off (false); unlisted types keep their setting. Types: ${
      alertTypes.join(", ")
    }.`
  })
})

const UnsubscribeParams = Schema.Struct({
  token: Schema.optional(Schema.String.pipe(Schema.maxLength(1024))).annotations({
    description: "The token of the alert e-mail's link"
  })
})

/** What a one-click (RFC 8058) or form post carries; nothing of it is needed. */
const UnsubscribeForm = HttpApiSchema.withEncoding(
  Schema.Struct({ "List-Unsubscribe": Schema.optional(Schema.String) }).annotations({
    parseOptions: { onExcessProperty: "error" }
  }),
  { kind: "UrlParams" }
)

export class AlertsApi extends HttpApiGroup.make("alerts")
  .add(
    Endpoint.get("preferences", "/v1/notifications/preferences", {
      policy: policy("R", "header", Roles.anyMember),
      summary: "Read your alert preferences",
      description:
        "Your own e-mail alert types in this organization: whether each is on, its default, and whether this server can send it."
    })
      .addSuccess(NotificationPreferencesDto)
  )
  .add(
    Endpoint.put("updatePreferences", "/v1/notifications/preferences", {
      policy: policy("F", "header", Roles.anyMember),
      summary: "Set your alert preferences",
      description:
        "Turns your alert types on or off in this organization; types not listed keep their setting. An unknown type is refused (422) and nothing changes."
    })
      .setPayload(UpdatePreferencesRequest)
      .addSuccess(NotificationPreferencesDto)
  )
  .add(
    Endpoint.get("unsubscribePage", "/v1/notifications/unsubscribe", {
      policy: policy("N"),
      summary: "Confirm an unsubscribe link",
      description:
        "The page an alert e-mail's link opens: it says which alert type the link turns off, and its button posts the same URL. Opening it changes nothing.",
      errors: [InvalidUnsubscribeToken]
    })
      .setUrlParams(UnsubscribeParams)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html" }))
  )
  .add(
    Endpoint.post("unsubscribe", "/v1/notifications/unsubscribe", {
      policy: policy("N"),
      summary: "Unsubscribe from an alert type",
      description:
        "Turns off the one alert type the token names, for its member, without a session: the one-click unsubscribe of RFC 8058 (`List-Unsubscribe=One-Click`) and the confirmation page's form. With `Accept: text/html` a page is answered instead of JSON. Repeating it is harmless.",
      errors: [InvalidUnsubscribeToken]
    })
      .setUrlParams(UnsubscribeParams)
      .setPayload(UnsubscribeForm)
      .addSuccess(UnsubscribedDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "E-mail alerts: what each member is told by e-mail, and one-click unsubscribe.")
{}
