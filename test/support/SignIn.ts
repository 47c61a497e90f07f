/** Signing in through the real email flow: start, read the code from the outbox, verify. */
import { Effect } from "effect"
import { client, CookieJar } from "./Http.js"
import type { TestServer } from "./TestServer.js"

export const codeFrom = (text: string) => /sign-in code is (\d{6})/.exec(text)?.[1]
export const linkFrom = (text: string) => /(http:\/\/\S+\/v1\/auth\/email\/callback\?token=\S+)/.exec(text)?.[1]

export const latestMailTo = (server: TestServer, email: string) =>
  Effect.map(server.outbox, (messages) => {
    const mine = messages.filter((message) => message.to === email)
    const last = mine[mine.length - 1]
    if (last === undefined) throw new Error(`no mail to ${email}`)
    return last
  })

/** A browser (cookie jar) signed in as `email`, and its CSRF token. */
export const signIn = (server: TestServer, email: string) =>
  Effect.gen(function*() {
    const jar = new CookieJar()
    const http = client(server.url, { jar })
    const started = yield* http("POST", "/v1/auth/email/start", { json: { email } })
    if (started.status !== 202) throw new Error(`start answered ${started.status}: ${started.text}`)
    const code = codeFrom((yield* latestMailTo(server, email)).text)
    const verified = yield* http("POST", "/v1/auth/email/verify", { json: { email, code } })
    if (verified.status !== 200) throw new Error(`verify answered ${verified.status}: ${verified.text}`)
    const csrf = jar.get("svc_csrf")!
    return { jar, csrf, http, withCsrf: { "x-csrf-token": csrf } }
  })
