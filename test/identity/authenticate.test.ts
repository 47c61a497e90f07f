/**
 * The kernel's Authenticate over the identity area's credentials: access codes, the session's CSRF
 * check and same-site guard, session lifetime, the operator token and the X-Organization-ID rules.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted, TestClock } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { ApiKeys } from "../../src/identity/ApiKeys.js"
import { Sessions } from "../../src/identity/Sessions.js"
import { Roles } from "../../src/kernel/domain/Access.js"
import { Authenticate, type RequestFacts, type Requirement } from "../../src/kernel/http/Authenticate.js"
import { baseUrl, bearer, requestOf, withAreas } from "./support.js"

const authenticate = (request: RequestFacts, requirement: Requirement) =>
  Effect.flatMap(Authenticate, (service) => service.authenticate(request, requirement))

const refusal = (request: RequestFacts, requirement: Requirement) =>
  Effect.map(Effect.flip(authenticate(request, requirement)), (error) => error._tag)

/** An owner (with a full_access key) and a session of theirs, and a stranger's organization. */
const setup = Effect.gen(function*() {
  const accounts = yield* Accounts
  const owner = yield* accounts.bootstrap("owner@example.com")
  const stranger = yield* accounts.bootstrap("stranger@example.com")
  const session = yield* (yield* Sessions).create(owner.user_id, owner.organization_id)
  const cookies = { svc_session: session.token, svc_csrf: session.csrf }
  return { owner, stranger, session, cookies }
})

const organizationOf = (request: RequestFacts, requirement: Requirement) =>
  Effect.map(authenticate(request, requirement), (caller) => Option.map(caller.organization, (o) => o.id))

const header: Requirement = { access: "R", organization: "header", roles: Roles.anyMember }

describe("Authenticate", () => {
  it.scoped("access codes: N needs nothing, a key is refused on S routes and above its preset", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { owner } = yield* setup
        const anonymous = yield* authenticate(requestOf("GET"), { access: "N", organization: "none" })
        assert.isTrue(Option.isNone(anonymous.user))
        assert.strictEqual(yield* refusal(requestOf("GET"), header), "unauthenticated")
        const key = requestOf("POST", { headers: bearer(owner.api_key) })
        assert.strictEqual(yield* refusal(key, { access: "S", organization: "none" }), "session_required")
        yield* authenticate(key, { access: "F", organization: "header", roles: Roles.anyMember })
        const readOnly = yield* (yield* ApiKeys).mint({
          organizationId: owner.organization_id,
          userId: owner.user_id,
          name: "viewer",
          preset: "read_only",
          expiresInDays: 1
        })
        const viewer = requestOf("GET", { headers: bearer(readOnly.secret) })
        yield* authenticate(viewer, { access: "R", organization: "header", roles: Roles.anyMember })
        assert.strictEqual(
          yield* refusal(viewer, { access: "U", organization: "header", roles: Roles.anyMember }),
          "insufficient_scope"
        )
        const basic = requestOf("GET", { headers: { authorization: "Basic abc" } })
        assert.strictEqual(yield* refusal(basic, header), "invalid_api_key")
      })
    ))

  it.scoped("a changing request with a session needs that session's CSRF token in the header and the cookie", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { cookies, owner } = yield* setup
        const other = yield* (yield* Sessions).create(owner.user_id, owner.organization_id)
        const requirement: Requirement = { access: "F", organization: "none" }
        yield* authenticate(requestOf("GET", { cookies }), requirement)
        yield* authenticate(requestOf("HEAD", { cookies }), requirement)
        const post = (headers: Record<string, string>, jar: Record<string, string> = cookies) =>
          refusal(requestOf("POST", { headers, cookies: jar }), requirement)
        assert.strictEqual(yield* post({}), "csrf_invalid")
        assert.strictEqual(yield* post({ "x-csrf-token": "wrong" }), "csrf_invalid")
        // Another session's token, even repeated in the cookie, is not this session's.
        assert.strictEqual(
          yield* post({ "x-csrf-token": other.csrf }, { svc_session: cookies.svc_session, svc_csrf: other.csrf }),
          "csrf_invalid"
        )
        // The header must repeat the cookie.
        assert.strictEqual(
          yield* post({ "x-csrf-token": cookies.svc_csrf }, { svc_session: cookies.svc_session }),
          "csrf_invalid"
        )
        const ok = yield* authenticate(
          requestOf("DELETE", { headers: { "x-csrf-token": cookies.svc_csrf }, cookies }),
          requirement
        )
        assert.strictEqual(Option.getOrThrow(ok.credential).kind, "session")
        // A key carries no ambient authority: no CSRF token needed.
        yield* authenticate(requestOf("POST", { headers: bearer(owner.api_key) }), requirement)
      })
    ))

  it.scoped("the same-site guard: a session changes or upgrades only from svc's own site, checked last", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { cookies, owner, stranger } = yield* setup
        const guarded: Requirement = {
          access: "R",
          organization: { resource: owner.organization_id },
          roles: Roles.anyMember,
          sessionGuard: "same_site"
        }
        const send = (method: string, headers: Record<string, string>, upgrading = false) =>
          authenticate({ ...requestOf(method, { headers, cookies }), upgrading }, guarded)
        yield* send("POST", { origin: baseUrl })
        yield* send("POST", {})
        yield* send("GET", { "sec-fetch-site": "cross-site" })
        const refused = <R>(effect: Effect.Effect<unknown, { readonly _tag: string }, R>) =>
          Effect.map(Effect.flip(effect), (error) => error._tag)
        assert.strictEqual(yield* refused(send("POST", { origin: "https://evil.example" })), "csrf_invalid")
        assert.strictEqual(yield* refused(send("DELETE", { "sec-fetch-site": "cross-site" })), "csrf_invalid")
        assert.strictEqual(yield* refused(send("GET", { origin: "https://evil.example" }, true)), "csrf_invalid")
        // Fetch Metadata wins over Origin.
        yield* send("POST", { "sec-fetch-site": "same-origin", origin: "https://evil.example" })
        // A session that may not act anyway answers as from svc's own site.
        const foreign: Requirement = {
          ...guarded,
          organization: { resource: stranger.organization_id },
          roles: Roles.anyMember
        }
        const notMember = yield* refusal(
          requestOf("POST", { headers: { origin: "https://evil.example" }, cookies }),
          foreign
        )
        assert.strictEqual(notMember, "resource_not_found")
        // A key is not ambient: another site's page cannot send it.
        yield* authenticate(requestOf("POST", { headers: { ...bearer(owner.api_key), origin: "https://x" } }), guarded)
      })
    ))

  it.scoped("a session ends when revoked and after thirty days", () =>
    withAreas(() =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
        const { cookies, owner } = yield* setup
        const sessions = yield* Sessions
        const none: Requirement = { access: "R", organization: "none" }
        yield* authenticate(requestOf("GET", { cookies }), none)
        assert.strictEqual(
          yield* refusal(requestOf("GET", { cookies: { svc_session: "forged" } }), none),
          "unauthenticated"
        )

        const revoked = yield* sessions.create(owner.user_id, null)
        yield* sessions.revoke(revoked.row.id)
        assert.strictEqual(
          yield* refusal(requestOf("GET", { cookies: { svc_session: revoked.token } }), none),
          "unauthenticated"
        )

        yield* TestClock.adjust("29 days")
        yield* authenticate(requestOf("GET", { cookies }), none)
        yield* TestClock.adjust("1 days")
        assert.strictEqual(yield* refusal(requestOf("GET", { cookies }), none), "unauthenticated")
      })
    ))

  it.scoped("the operator token: not found when unset, 401 when wrong", () =>
    Effect.gen(function*() {
      const operator: Requirement = { access: "O", organization: "none" }
      const withToken = (token?: string) =>
        requestOf("GET", token ? { headers: { "x-svc-operator-token": token } } : {})
      yield* withAreas(() =>
        Effect.gen(function*() {
          assert.strictEqual(yield* refusal(withToken("secret"), operator), "resource_not_found")
        })
      )
      yield* withAreas(() =>
        Effect.gen(function*() {
          assert.strictEqual(yield* refusal(withToken(), operator), "unauthenticated")
          assert.strictEqual(yield* refusal(withToken("secreT"), operator), "unauthenticated")
          yield* authenticate(withToken("secret"), operator)
        }), { operatorToken: Option.some(Redacted.make("secret")) })
    }))

  it.scoped("X-Organization-ID with a key: the key fixes the organization; another is a mismatch", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { owner, stranger } = yield* setup
        const key = (headers: Record<string, string> = {}) =>
          requestOf("GET", { headers: { ...bearer(owner.api_key), ...headers } })
        assert.deepStrictEqual(yield* organizationOf(key(), header), Option.some(owner.organization_id))
        assert.deepStrictEqual(
          yield* organizationOf(key({ "x-organization-id": owner.organization_id.toUpperCase() }), header),
          Option.some(owner.organization_id)
        )
        assert.strictEqual(
          yield* refusal(key({ "x-organization-id": stranger.organization_id }), header),
          "organization_mismatch"
        )
        assert.strictEqual(yield* refusal(key({ "x-organization-id": "not-a-uuid" }), header), "invalid_request")
        // An organization in the path: another one is not found; the header must still be a UUID and,
        // when sent, name the key's organization, as on [ORG] routes.
        const ownPath: Requirement = {
          access: "R",
          organization: { path: owner.organization_id },
          roles: Roles.anyMember
        }
        const strangerPath: Requirement = { ...ownPath, organization: { path: stranger.organization_id } }
        assert.strictEqual(yield* refusal(key(), strangerPath), "resource_not_found")
        assert.strictEqual(
          yield* refusal(key({ "x-organization-id": stranger.organization_id }), ownPath),
          "organization_mismatch"
        )
        assert.strictEqual(
          yield* refusal(key({ "x-organization-id": stranger.organization_id }), strangerPath),
          "organization_mismatch"
        )
        assert.deepStrictEqual(
          yield* organizationOf(key({ "x-organization-id": owner.organization_id }), ownPath),
          Option.some(owner.organization_id)
        )
        assert.strictEqual(
          yield* refusal(key({ "x-organization-id": "nope" }), {
            access: "R",
            organization: { path: owner.organization_id },
            roles: Roles.anyMember
          }),
          "invalid_request"
        )
        // A raw route's resource ignores the header, which is the machine's app's, not svc's.
        assert.deepStrictEqual(
          yield* organizationOf(key({ "x-organization-id": "nope" }), {
            access: "R",
            organization: { resource: owner.organization_id },
            roles: Roles.anyMember
          }),
          Option.some(owner.organization_id)
        )
      })
    ))

  it.scoped("X-Organization-ID with a session: required on every organization-scoped route, even with an active organization", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const { cookies, owner, stranger } = yield* setup
        const session = (headers: Record<string, string> = {}, jar = cookies) =>
          requestOf("GET", { headers, cookies: jar })
        assert.deepStrictEqual(
          yield* organizationOf(session({ "x-organization-id": owner.organization_id }), header),
          Option.some(owner.organization_id)
        )
        assert.strictEqual(
          yield* refusal(session({ "x-organization-id": stranger.organization_id }), header),
          "resource_not_found"
        )
        const noActive = yield* (yield* Sessions).create(owner.user_id, null)
        // The session of setup has its organization active; neither may leave the header out.
        for (const bare of [session(), session({}, { svc_session: noActive.token, svc_csrf: noActive.csrf })]) {
          const needsHeader = yield* Effect.flip(authenticate(bare, header))
          assert.strictEqual(needsHeader._tag, "invalid_request")
          assert.deepStrictEqual(
            (needsHeader as { field_errors?: ReadonlyArray<{ field: string }> }).field_errors?.map((e) => e.field),
            ["X-Organization-ID"]
          )
          // Routes outside an organization do not need it; those naming it in the path do, and it must match.
          yield* authenticate(bare, { access: "R", organization: "none" })
          const inPath: Requirement = {
            access: "R",
            organization: { path: owner.organization_id },
            roles: Roles.anyMember
          }
          assert.strictEqual(yield* refusal(bare, inPath), "invalid_request")
        }
        const inPath: Requirement = {
          access: "R",
          organization: { path: owner.organization_id },
          roles: Roles.anyMember
        }
        assert.deepStrictEqual(
          yield* organizationOf(session({ "x-organization-id": owner.organization_id.toUpperCase() }), inPath),
          Option.some(owner.organization_id)
        )
        assert.strictEqual(
          yield* refusal(session({ "x-organization-id": stranger.organization_id }), inPath),
          "organization_mismatch"
        )
      })
    ))
})
