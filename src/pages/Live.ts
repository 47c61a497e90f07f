/**
 * The pages svc serves at `{ui_url}` (src/pages/Kit.ts is their kit): one router entry per page,
 * outside the published API. A page reads its services here and renders with the kit; pages that
 * need a signed-in user send others to `/sign-in` with a `return_to` back.
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { defaultKeyName, DeviceGrant } from "../identity/DeviceGrant.js"
import { safeReturnTo } from "../identity/EmailSignIn.js"
import { SignInMethods } from "../identity/SignInMethods.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Authenticate } from "../kernel/http/Authenticate.js"
import { Organizations } from "../organizations/Organizations.js"
import { devicePage } from "./DevicePage.js"
import { homePage } from "./HomePage.js"
import { pageResponse, redirect } from "./Kit.js"
import { signInPage } from "./SignInPage.js"
import { returnToOf, viewerOf } from "./Viewer.js"

export const PagesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const authenticate = yield* Authenticate
    const methods = yield* SignInMethods
    const organizations = yield* Organizations
    const deviceGrant = yield* DeviceGrant
    /** The UI's path prefix: pages live under `{ui_url}`, which may have a path of its own. */
    const uiPath = new URL(config.uiUrl).pathname.replace(/\/$/, "")
    const signInFirst = (request: HttpServerRequest.HttpServerRequest) =>
      redirect(`${config.uiUrl}/sign-in?return_to=${encodeURIComponent(returnToOf(request, uiPath))}`)

    yield* router.get(
      `${uiPath}/sign-in` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = new URL(request.url, "http://x").searchParams
        const viewer = yield* viewerOf(authenticate, request)
        return pageResponse(signInPage({
          apiBase: config.baseUrl,
          uiUrl: config.uiUrl,
          returnTo: safeReturnTo(query.get("return_to")),
          error: query.get("error") ?? undefined,
          access: methods.access,
          waitlistUrl: methods.waitlistUrl,
          providers: methods.providers,
          signedInAs: Option.getOrUndefined(Option.map(viewer, (user) => user.email))
        }))
      })
    )

    yield* router.get(
      `${uiPath}/device` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const viewer = yield* viewerOf(authenticate, request)
        if (Option.isNone(viewer)) return signInFirst(request)
        const typed = new URL(request.url, "http://x").searchParams.get("user_code") ?? undefined
        const found = typed === undefined || typed.trim() === ""
          ? undefined
          : yield* Effect.either(deviceGrant.describe(viewer.value.id, typed))
        const memberships = yield* organizations.organizationsOf(viewer.value.id)
        return pageResponse(devicePage({
          apiBase: config.baseUrl,
          email: viewer.value.email,
          typed,
          request: found?._tag === "Right"
            ? {
              userCode: found.right.userCode,
              clientName: found.right.row.client_name,
              requestedScope: found.right.row.requested_scope,
              defaultKeyName: defaultKeyName(found.right.row.client_name)
            }
            : undefined,
          problem: found?._tag === "Left"
            ? found.left._tag === "rate_limited"
              ? "Too many codes tried. Wait a few minutes and try again."
              : "That code is unknown, expired or already used. Check the code on your device."
            : undefined,
          organizations: memberships.map((m) => ({ id: m.organization_id, name: m.name, role: m.role }))
        }))
      })
    )

    yield* router.get(
      `${uiPath}/` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const viewer = yield* viewerOf(authenticate, request)
        if (Option.isNone(viewer)) return signInFirst(request)
        const memberships = yield* organizations.organizationsOf(viewer.value.id)
        return pageResponse(homePage({
          apiBase: config.baseUrl,
          uiUrl: config.uiUrl,
          email: viewer.value.email,
          organizations: memberships.map((m) => ({ id: m.organization_id, name: m.name, role: m.role }))
        }))
      })
    )
  })
)
