/** Helpers for member and invitation tests over HTTP: an owner's session, invitations and their links. */
import { Effect } from "effect"
import { latestMailTo, signIn } from "./SignIn.js"
import type { TestServer } from "./TestServer.js"

export type Browser = Effect.Effect.Success<ReturnType<typeof signIn>>

/** The token of the newest invitation link mailed to `email`. */
export const invitationTokenFor = (server: TestServer, email: string) =>
  Effect.map(latestMailTo(server, email), (message) => {
    const token = /\/invitations\/accept\?token=([A-Za-z0-9_-]+)/.exec(message.text)?.[1]
    if (token === undefined) throw new Error(`no invitation link in: ${message.text}`)
    return token
  })

/** Invites `email` with `role` as `browser` and answers the token the e-mail carried. */
export const invite = (server: TestServer, browser: Browser, organizationId: string, email: string, role: string) =>
  Effect.gen(function*() {
    const reply = yield* browser.http("POST", `/v1/organizations/${organizationId}/invitations`, {
      headers: { ...browser.withCsrf, "x-organization-id": organizationId },
      json: { email, role }
    })
    if (reply.status !== 201) throw new Error(`invite answered ${reply.status}: ${reply.text}`)
    return { invitation: reply.body, token: yield* invitationTokenFor(server, email.toLowerCase()) }
  })

/** `email` signed in and joined to the organization through an invitation with `role`. */
export const joined = (server: TestServer, owner: Browser, organizationId: string, email: string, role: string) =>
  Effect.gen(function*() {
    const { token } = yield* invite(server, owner, organizationId, email, role)
    const browser = yield* signIn(server, email)
    const accepted = yield* browser.http("POST", "/v1/invitations/accept", {
      headers: browser.withCsrf,
      json: { token }
    })
    if (accepted.status !== 200) throw new Error(`accept answered ${accepted.status}: ${accepted.text}`)
    const me = yield* browser.http("GET", "/v1/me")
    return { browser, userId: me.body.user.id as string }
  })
