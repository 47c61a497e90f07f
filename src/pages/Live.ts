/**
 * The pages svc serves at `{ui_url}`: all of them are the console (console/, docs/console.md), one
 * document whose files are under `{ui_url}/assets/`. `/` shows an organization; `/sign-in`,
 * `/device`, `/invitations/accept` and `/account` are pages outside an organization, for which the
 * document carries what svc knows of them (PageData.ts). Pages that need a signed-in user send
 * others to `/sign-in` with a `return_to` back.
 */
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Accounts } from "../identity/Accounts.js"
import { defaultKeyName, DeviceGrant } from "../identity/DeviceGrant.js"
import { safeReturnTo } from "../identity/EmailSignIn.js"
import { SignInMethods } from "../identity/SignInMethods.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { acceptsGzip } from "../kernel/http/AcceptEncoding.js"
import { Authenticate } from "../kernel/http/Authenticate.js"
import { Invitations } from "../organizations/Invitations.js"
import { Organizations } from "../organizations/Organizations.js"
import { consoleBuild } from "./ConsoleAssets.js"
import { consoleDocument, consoleFile, redirect } from "./ConsolePage.js"
import type { PageData } from "./PageData.js"
import { returnToOf, viewerOf } from "./Viewer.js"

/** Without the console's build (a library build outside the repository) there are no pages. */
const noConsole = HttpServerResponse.text("This svc was built without its console.", { status: 503 })

export const PagesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const authenticate = yield* Authenticate
    const methods = yield* SignInMethods
    const organizations = yield* Organizations
    const invitations = yield* Invitations
    const accounts = yield* Accounts
    const deviceGrant = yield* DeviceGrant
    /** The UI's path prefix: pages live under `{ui_url}`, which may have a path of its own. */
    const uiPath = new URL(config.uiUrl).pathname.replace(/\/$/, "")
    const signInFirst = (request: HttpServerRequest.HttpServerRequest) =>
      redirect(`${config.uiUrl}/sign-in?return_to=${encodeURIComponent(returnToOf(request, uiPath))}`)
    /** The console's document, showing `page` when given. */
    const document = (page?: PageData, status?: number) =>
      Effect.map(consoleBuild, (build) =>
        Option.isNone(build)
          ? noConsole
          : consoleDocument({
            build: build.value,
            apiBase: config.baseUrl,
            uiUrl: config.uiUrl,
            uiPath,
            ...(page === undefined ? {} : { page }),
            ...(status === undefined ? {} : { status })
          }))

    yield* router.get(
      `${uiPath}/sign-in` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = new URL(request.url, "http://x").searchParams
        const viewer = yield* viewerOf(authenticate, request)
        return yield* document({
          page: "sign-in",
          returnTo: safeReturnTo(query.get("return_to")),
          error: query.get("error"),
          access: methods.access,
          waitlistUrl: methods.waitlistUrl,
          providers: methods.providers.map(({ display_name, kind, name }) => ({ name, display_name, kind })),
          signedInAs: Option.getOrNull(Option.map(viewer, (user) => user.email))
        })
      })
    )

    // The invitee signs in first (an invited address may create its account), then sees what the
    // invitation is for and accepts it with one button.
    yield* router.get(
      `${uiPath}/invitations/accept` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const viewer = yield* viewerOf(authenticate, request)
        if (Option.isNone(viewer)) return signInFirst(request)
        const token = new URL(request.url, "http://x").searchParams.get("token") ?? ""
        const found = yield* Effect.option(invitations.preview(token))
        const invitation = Option.isNone(found) ? null : {
          organizationName: found.value.organization.name,
          email: found.value.invitation.email,
          role: found.value.invitation.role,
          expiresAt: found.value.invitation.expires_at,
          state: found.value.state,
          forViewer: Option.getOrNull(yield* accounts.userIdOfAddress(found.value.invitation.email)) === viewer.value.id
        }
        return yield* document(
          { page: "invitation", signedInAs: viewer.value.email, token, invitation },
          invitation === null ? 404 : 200
        )
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
        return yield* document({
          page: "device",
          email: viewer.value.email,
          typed: typed ?? null,
          request: found?._tag === "Right"
            ? {
              userCode: found.right.userCode,
              clientName: found.right.row.client_name,
              requestedScope: found.right.row.requested_scope,
              defaultKeyName: defaultKeyName(found.right.row.client_name)
            }
            : null,
          problem: found?._tag === "Left" ? found.left._tag === "rate_limited" ? "rate_limited" : "unknown" : null,
          organizations: memberships.map((m) => ({ id: m.organization_id, name: m.name, role: m.role }))
        })
      })
    )

    yield* router.get(
      `${uiPath}/` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const viewer = yield* viewerOf(authenticate, request)
        if (Option.isNone(viewer)) return signInFirst(request)
        return yield* document()
      })
    )

    // The console's files: public (they hold no data), named by their content's hash.
    yield* router.get(
      `${uiPath}/assets/:name` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const { name } = yield* HttpRouter.params
        const build = yield* consoleBuild
        if (Option.isNone(build) || name === undefined) return HttpServerResponse.text("Not found", { status: 404 })
        return consoleFile(build.value, name, acceptsGzip(request.headers["accept-encoding"]))
      })
    )

    yield* router.get(
      `${uiPath}/account` as `/${string}`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const viewer = yield* viewerOf(authenticate, request)
        if (Option.isNone(viewer)) return signInFirst(request)
        const memberships = yield* organizations.organizationsOf(viewer.value.id)
        const identities = yield* accounts.identitiesOf(viewer.value.id)
        const providerNames = new Map(methods.providers.map((provider) => [provider.name, provider.display_name]))
        return yield* document({
          page: "account",
          email: viewer.value.email,
          organizations: memberships.map((m) => ({ id: m.organization_id, name: m.name, role: m.role })),
          identities: identities.map((identity) =>
            identity.provider === "email"
              ? identity.subject
              : `${providerNames.get(identity.provider) ?? identity.provider}${
                identity.email === null ? "" : ` (${identity.email})`
              }`
          ),
          providers: methods.providers.filter((provider) =>
            provider.kind === "oidc" && !identities.some((identity) => identity.provider === provider.name)
          ),
          emailAvailable: methods.emailAvailable
        })
      })
    )
  })
)
