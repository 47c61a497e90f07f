/**
 * `svc login [--url URL]` by the device authorization grant (RFC 8628): asks the server for a code,
 * shows the code and the page where a signed-in person approves it (it opens nothing by itself),
 * polls the token route every `interval` seconds (5 more after each `slow_down`), and stores the
 * API key it is given in the config file (mode 0600). `svc logout` revokes the stored key when it
 * may and removes the file.
 *
 * The device routes are sign-in routes answered in the RFC's own shape (`{error,
 * error_description}`), not problem details, so they are spoken here directly.
 */
import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { makeClient } from "../client/Client.js"
import { readConfig, removeConfig, writeConfig } from "./ConfigFile.js"
import { serverUrl } from "./Connect.js"
import { ApiKeyPresets, requestCode, waitForKey } from "./DeviceGrant.js"
import { stderr, stdout } from "./Output.js"

const login = Command.make("login", {
  url: Options.text("url").pipe(
    Options.optional,
    Options.withDescription("The svc server (default: SVC_URL, the stored one, http://127.0.0.1:8080)")
  ),
  scope: Options.choice("scope", ApiKeyPresets).pipe(
    Options.optional,
    Options.withDescription("The key's preset to ask for (default create_and_use)")
  ),
  name: Options.text("client-name").pipe(
    Options.optional,
    Options.withDescription("How the key request is shown (default svc CLI)")
  )
}, (flags) =>
  Effect.gen(function*() {
    const url = Option.isSome(flags.url) ? flags.url.value.replace(/\/+$/, "") : yield* serverUrl
    const code = yield* requestCode(url, {
      ...Option.match(flags.name, { onNone: () => ({}), onSome: (client_name) => ({ client_name }) }),
      ...Option.match(flags.scope, { onNone: () => ({}), onSome: (scope) => ({ scope }) })
    })
    yield* stderr(
      `To sign in, open ${code.verification_uri} and enter the code\n\n    ${code.user_code}\n\n` +
        `(or open ${code.verification_uri_complete})\nWaiting for approval...\n`
    )
    const token = yield* waitForKey(url, code)
    const path = yield* writeConfig({ url, api_key: token.access_token, api_key_id: token.api_key?.id })
    yield* stdout(
      `Signed in to ${url} (organization ${token.api_key?.organization_id ?? "?"}, key ${
        token.api_key?.name ?? "?"
      }, ` +
        `${token.scope}); the key is stored in ${path}\n`
    )
  })).pipe(Command.withDescription("Sign in by approving a code in the browser; stores an API key"))

const logout = Command.make("logout", {
  keepKey: Options.boolean("keep-key").pipe(Options.withDescription("Leave the key valid on the server"))
}, (flags) =>
  Effect.gen(function*() {
    const stored = yield* readConfig
    if (!flags.keepKey && stored.api_key !== undefined && stored.api_key_id !== undefined) {
      const client = yield* makeClient({ baseUrl: (stored.url ?? "").replace(/\/+$/, ""), apiKey: stored.api_key })
      yield* client.apiKeys.revoke({ path: { id: stored.api_key_id } }).pipe(
        Effect.zipRight(stderr("the key was revoked\n")),
        Effect.catchAll((error) =>
          stderr(
            `the key ${stored.api_key_id} could not be revoked (${(error as { _tag?: string })._tag ?? "error"}); ` +
              `it stays valid until it expires or is revoked: \`svc keys revoke ${stored.api_key_id}\` with ` +
              "another key, or Revoke in the console's Keys view (#/o/<organization>/keys)\n"
          )
        )
      )
    }
    const removed = yield* removeConfig
    yield* stdout(removed.existed ? `Signed out; removed ${removed.path}\n` : "Not signed in\n")
  })).pipe(Command.withDescription("Forget the stored key (and revoke it on the server when it may)"))

export { login, logout }
