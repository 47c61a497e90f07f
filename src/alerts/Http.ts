import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Alerts } from "./Alerts.js"
import { confirmPage, donePage } from "./Pages.js"

/** A page for a browser's form post (it asked for HTML), JSON for a mail client's one-click. */
const wantsHtml = (accept: string | undefined) => accept !== undefined && /\btext\/html\b/i.test(accept)

export const AlertsHandlers = HttpApiBuilder.group(Api, "alerts", (handlers) =>
  Effect.gen(function*() {
    const alerts = yield* Alerts
    const member = Effect.zip(currentOrganization, currentUser)
    return handlers
      .handle("preferences", () =>
        Effect.flatMap(member, ([organization, user]) => alerts.view(organization.id, user.id, user.email)))
      .handle("updatePreferences", ({ payload }) =>
        Effect.flatMap(member, ([organization, user]) =>
          alerts.update(organization.id, user.id, user.email, payload.alerts)))
      .handle("unsubscribePage", ({ urlParams }) =>
        Effect.map(alerts.preview(urlParams.token), (what) =>
          confirmPage(what.type, urlParams.token!)))
      // Raw: a one-click post may carry a form, a multipart body or nothing; none of it is needed.
      .handleRaw("unsubscribe", ({ request, urlParams }) =>
        Effect.map(alerts.unsubscribe(urlParams.token), (done) =>
          wantsHtml(request.headers["accept"])
            ? HttpServerResponse.html(donePage(done.type))
            : HttpServerResponse.unsafeJson(done)))
  })).pipe(buildWithOnly(Authorization, Alerts))
