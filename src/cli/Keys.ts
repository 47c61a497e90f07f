/**
 * `svc keys ...`: the organization's API keys. `create` prints the secret once (the server keeps
 * only its hash); `revoke` ends a key at once, the one `svc logout` could not revoke included.
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import type { ApiKeyDto } from "../identity/Api.js"
import { connect } from "./Connect.js"
import { ApiKeyPresets } from "./DeviceGrant.js"
import { CommandFailed } from "./Failure.js"
import { type Column, json, printJson, printList, stderr, stdout, time } from "./Output.js"

type ApiKey = typeof ApiKeyDto.Type

const columns: ReadonlyArray<Column<ApiKey>> = [
  { header: "name", value: (k) => k.name },
  { header: "id", value: (k) => k.id },
  { header: "key", value: (k) => `${k.prefix}...${k.last_four}` },
  { header: "preset", value: (k) => k.preset },
  { header: "expires", value: (k) => time(k.expires_at) },
  { header: "last used", value: (k) => time(k.last_used_at) },
  { header: "revoked", value: (k) => time(k.revoked_at) }
]

const list = Command.make("list", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printList(flags.json, (yield* client.apiKeys.list()).items, columns)
  })).pipe(Command.withDescription("List the organization's API keys (never their secrets)"))

const create = Command.make("create", {
  name: Args.text({ name: "name" }).pipe(Args.withDescription("How the key is shown in lists, 1-64 characters")),
  preset: Options.choice("preset", ApiKeyPresets).pipe(
    Options.withDefault("use_existing" as const),
    Options.withDescription(
      "What the key may do: read_only, use_existing (machines that exist), create_and_use, full_access " +
        "(default use_existing)"
    )
  ),
  expires: Options.integer("expires-in-days").pipe(
    Options.optional,
    Options.withDescription("Days until it expires, 1-365 (default 90)")
  ),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const created = yield* client.apiKeys.create({
      payload: {
        name: flags.name,
        preset: flags.preset,
        ...Option.match(flags.expires, { onNone: () => ({}), onSome: (days) => ({ expires_in_days: days }) })
      }
    })
    if (flags.json) return yield* printJson(created)
    // The secret alone on stdout (`svc keys create ci > key`), what to know about it on stderr.
    yield* stdout(created.secret + "\n")
    yield* stderr(
      `key ${created.api_key.name} (${created.api_key.id}, ${created.api_key.preset}) expires ${
        time(created.api_key.expires_at)
      }; this is the only time its secret is shown\n`
    )
  })).pipe(Command.withDescription("Create an API key and print its secret, once"))

const revoke = Command.make("revoke", {
  key: Args.text({ name: "key" }).pipe(Args.withDescription("The key's id, or its name when no other key has it")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const { items } = yield* client.apiKeys.list()
    const matches = items.filter((k) => k.id === flags.key || (k.name === flags.key && k.revoked_at === null))
    if (matches.length !== 1) {
      return yield* new CommandFailed({
        message: matches.length === 0
          ? `no key ${JSON.stringify(flags.key)}`
          : `${matches.length} keys are named ${JSON.stringify(flags.key)}; give the id`
      })
    }
    yield* client.apiKeys.revoke({ path: { id: matches[0]!.id } })
    yield* flags.json ? printJson({ revoked: matches[0]!.id }) : stdout(`revoked ${matches[0]!.name}\n`)
  })).pipe(Command.withDescription("Revoke an API key; it stops working at once"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("API keys: list, create (the secret is shown once), revoke"),
  Command.withSubcommands([list, create, revoke])
)
