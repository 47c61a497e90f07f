/**
 * `svc ports ...` (a machine's exposed ports and their access tokens) and `svc ssh-keys add`.
 * Exposing and installing a key are operations (202, `--wait` to see them done); a port token
 * answers at once.
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import { UsageError } from "./Failure.js"
import { machineArg, withMachine } from "./Machines.js"
import { json, printList, printRecord, time, wait } from "./Output.js"
import { reportAccepted } from "./Progress.js"

const portArg = Args.integer({ name: "port" }).pipe(Args.withDescription("A TCP port in the machine, 1-65535"))

const list = Command.make("list", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const machine = yield* client.machines.get({ path: { id } })
    yield* printList(flags.json, machine.ports, [
      { header: "port", value: (p) => p.port },
      { header: "public", value: (p) => p.public }
    ])
  })).pipe(Command.withDescription("List a machine's exposed ports"))

const expose = Command.make("expose", {
  machine: machineArg,
  port: portArg,
  public: Options.boolean("public").pipe(
    Options.withDescription("Open it to anyone with the URL (else a port token is needed)")
  ),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.machines.exposePort({
      path: { id },
      payload: { port: flags.port, ...(flags.public ? { public: true } : {}) }
    })
    yield* reportAccepted(client, accepted, { ...flags, what: `expose ${flags.machine}:${flags.port}` })
  })).pipe(Command.withDescription("Expose a port of a machine through the port proxy"))

const unexpose = Command.make(
  "unexpose",
  { machine: machineArg, port: portArg, wait, json },
  (flags) =>
    Effect.gen(function*() {
      const { client, id } = yield* withMachine(flags.machine)
      const accepted = yield* client.machines.unexposePort({ path: { id, port: flags.port } })
      yield* reportAccepted(client, accepted, { ...flags, what: `unexpose ${flags.machine}:${flags.port}` })
    })
).pipe(Command.withDescription("Stop exposing a port"))

const token = Command.make("token", {
  machine: machineArg,
  port: portArg,
  expires: Options.integer("expires-in").pipe(
    Options.withDefault(3600),
    Options.withDescription("Seconds the token is valid, 60-86400 (default 3600)")
  ),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const made = yield* client.ports.createPortToken({
      path: { id, port: flags.port },
      payload: { expires_in_seconds: flags.expires }
    })
    yield* printRecord(flags.json, made, [
      { header: "url", value: (t) => t.url },
      { header: "token", value: (t) => t.token },
      { header: "expires", value: (t) => time(t.expires_at) }
    ])
  })).pipe(Command.withDescription("Make a token that opens a private exposed port until it expires"))

export const ports = Command.make("ports").pipe(
  Command.withDescription("A machine's exposed ports and the tokens that open private ones"),
  Command.withSubcommands([list, expose, unexpose, token])
)

const add = Command.make("add", {
  machine: machineArg,
  key: Args.text({ name: "public-key-file" }).pipe(
    Args.withDefault("-"),
    Args.withDescription("An OpenSSH public key file (~/.ssh/id_ed25519.pub); - or none reads standard input")
  ),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => NodeFs.readFileSync(flags.key === "-" ? 0 : flags.key, "utf8").trim(),
      catch: (error) => new UsageError({ message: `${flags.key}: ${(error as Error).message}` })
    })
    if (text === "" || text.includes("\n")) {
      return yield* new UsageError({ message: `${flags.key}: expected one public key line` })
    }
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.machines.installSshKey({ path: { id }, payload: { public_key: text } })
    yield* reportAccepted(client, accepted, { ...flags, what: `ssh key for ${flags.machine}` })
  })).pipe(Command.withDescription("Add an SSH public key to a machine's authorized keys"))

export const sshKeys = Command.make("ssh-keys").pipe(
  Command.withDescription("SSH keys of machines"),
  Command.withSubcommands([add])
)
