import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import { install } from "../agents/providers/Tools.js"
import * as AppConfig from "../kernel/config/AppConfig.js"

/**
 * `svc agents install [--dir DIR]`: installs the three command-line agents with npm into the
 * agents' tools folder (default `SVC_AGENTS_DIR`, else `<data dir>/tools/agents`), which every
 * machine reads, and records their versions. Prints the versions as one JSON line.
 */
const installCommand = Command.make(
  "install",
  {
    dir: Options.text("dir").pipe(
      Options.optional,
      Options.withDescription("The agents' tools folder (default SVC_AGENTS_DIR, else <data dir>/tools/agents)")
    )
  },
  ({ dir }) =>
    Effect.gen(function*() {
      const target = Option.isSome(dir)
        ? dir.value
        : AppConfig.agentsDirOf(yield* Effect.provide(AppConfig.AppConfig, AppConfig.layer))
      const versions = yield* Effect.try(() => install(target, (line) => process.stderr.write(`${line}\n`)))
      yield* Console.log(JSON.stringify({ dir: target, versions }))
    })
).pipe(Command.withDescription("Install claude, codex and opencode into the agents' tools folder"))

export const agents = Command.make("agents").pipe(
  Command.withDescription("The coding agents that run inside machines"),
  Command.withSubcommands([installCommand])
)
