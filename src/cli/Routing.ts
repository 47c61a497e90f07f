/**
 * What main.ts does before @effect/cli parses: help (src/cli/Help.ts), a mistyped command, and
 * `svc __complete` for the completion scripts, all from the command tree's spec; and the console
 * @effect/cli prints through, without colour codes when the stream is not a terminal.
 */
import { Console, Effect } from "effect"
import { makeClient } from "../client/Client.js"
import { svc, version } from "./Commands.js"
import { commandSpec } from "./CommandSpec.js"
import { complete } from "./Completer.js"
import { readConfig } from "./ConfigFile.js"
import { serverUrl } from "./Connect.js"
import { renderHelp, routeArgs, unknownCommandText } from "./Help.js"

const spec = commandSpec(svc)

/** Machine names for completion: one quick request, nothing on any failure. */
const machineNames = () =>
  Effect.gen(function*() {
    const stored = yield* readConfig
    const apiKey = process.env.SVC_API_KEY || stored.api_key
    if (apiKey === undefined) return []
    const client = yield* makeClient({ baseUrl: yield* serverUrl, apiKey, retry: false })
    const page = yield* client.machines.list({ urlParams: { limit: "100" } })
    return page.items.map((m) => m.name)
  }).pipe(
    Effect.timeout("3 seconds"),
    Effect.catchAll(() => Effect.succeed([] as ReadonlyArray<string>)),
    Effect.runPromise
  )

/** True when the words were answered here (the process's exit code is set); false to parse them. */
export const routeBeforeParsing = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (argv[0] === "__complete") {
      const words = argv[1] === "--" ? argv.slice(2) : argv.slice(1)
      const candidates = yield* Effect.promise(() => complete(spec, words, { machines: machineNames }))
      if (candidates.length > 0) process.stdout.write(candidates.join("\n") + "\n")
      return true
    }
    const route = routeArgs(spec, argv)
    switch (route._tag) {
      case "Help":
        process.stdout.write(renderHelp(route.spec, route.spec === spec ? { version: `svc ${version}` } : {}))
        return true
      case "UnknownCommand":
        process.stderr.write(unknownCommandText(route.spec, route.word))
        process.exitCode = 2
        return true
      case "Run":
        return false
    }
  })

const ansi = /\x1b\[[0-9;]*m/g

const plain = (tty: boolean | undefined, args: ReadonlyArray<unknown>) =>
  tty === true ? args : args.map((a) => typeof a === "string" ? a.replace(ansi, "") : a)

/** @effect/cli's own output (its validation errors, `--version`) with no colour codes off a terminal. */
export const plainConsole = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Console.consoleWith((base) =>
    Console.withConsole(self, {
      ...base,
      log: (...args: ReadonlyArray<unknown>) => base.log(...plain(process.stdout.isTTY, args)),
      error: (...args: ReadonlyArray<unknown>) => base.error(...plain(process.stderr.isTTY, args))
    })
  )
