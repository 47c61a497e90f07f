/**
 * `svc agent prompt|events|steer|interrupt|conversations|models`. `prompt` starts a turn and follows
 * the conversation's events (long-polling the JSON events route, whose cursor makes every read
 * resumable and retryable) until the conversation is `idle`: the agent's messages on stdout, its
 * reasoning and tool calls on stderr, or every event as a JSON line with `--json`. Ctrl-C sends an
 * interrupt and still follows the turn to its end; a second Ctrl-C leaves at once.
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { AgentConversationDto, AgentEventsDto } from "../agents/Api.js"
import type { AgentEvent } from "../agents/providers/Schemas.js"
import type { Client } from "../client/Client.js"
import { connect } from "./Connect.js"
import { CommandFailed, UsageError } from "./Failure.js"
import { machineArg, withMachine } from "./Machines.js"
import { type Column, json, printJson, printList, stderr, stdout, time } from "./Output.js"

const conversationArg = Args.text({ name: "conversation" }).pipe(Args.withDescription("A conversation id"))

const textArg = Args.text({ name: "text" }).pipe(Args.withDescription("The text, or - to read it from standard input"))

const readText = (text: string) =>
  text !== "-" ? Effect.succeed(text) : Effect.promise(async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString("utf8")
  })

const clip = (text: string, max = 400) => text.length > max ? `${text.slice(0, max)}…` : text

/** An event as people read it: messages are the answer (stdout), the rest is commentary (stderr). */
const show = (event: AgentEvent) => {
  switch (event.type) {
    case "message":
      return stdout(`${event.text ?? ""}\n`)
    case "reasoning":
      return stderr(`· ${clip(event.text ?? "")}\n`)
    case "tool_call":
      return stderr(`→ ${event.name ?? "tool"} ${clip(event.input ?? "", 200)}\n`)
    case "tool_result":
      return stderr(`← ${event.is_error === true ? "error: " : ""}${clip(event.output ?? event.result ?? "", 200)}\n`)
    case "error":
      return stderr(`! ${event.code ?? "error"}: ${event.message ?? ""}\n`)
    case "input_accepted":
      return stderr(`(${event.kind ?? "input"} accepted)\n`)
    case "turn_finished":
      return stderr(`turn ${event.outcome ?? "finished"}\n`)
    default:
      return Effect.void
  }
}

const printEvent = (asJson: boolean) => (event: AgentEvent) =>
  asJson ? stdout(JSON.stringify(event) + "\n") : show(event)

/** One long-poll read of the events after `cursor` (the server waits up to 30 s for one). */
const readEvents = (client: Client, id: string, conversationId: string, cursor: number) =>
  client.agents.events({
    path: { id },
    urlParams: { conversation_id: conversationId, cursor: String(cursor), wait_seconds: "30" }
  }) as Effect.Effect<AgentEventsDto, unknown>

/**
 * Prints a conversation's events from `cursor` until `until` says stop (it sees each event after
 * it was printed); answers the last read.
 */
const followEvents = (
  client: Client,
  id: string,
  conversationId: string,
  cursor: number,
  print: (event: AgentEvent) => Effect.Effect<unknown>,
  until: (event: AgentEvent) => boolean
) =>
  Effect.gen(function*() {
    let position = cursor
    while (true) {
      const page = yield* readEvents(client, id, conversationId, position)
      for (const event of page.events) {
        yield* print(event)
        if (until(event)) return page
      }
      position = page.cursor
    }
  })

/** The turn's events only, up to the `idle` that follows its end. */
const followTurn = (client: Client, id: string, conversationId: string, turnId: string, asJson: boolean) => {
  let mine = false
  let finished = false
  const print = printEvent(asJson)
  return followEvents(client, id, conversationId, 0, (event) => {
    if (event.turn_id === turnId) mine = true
    if (event.turn_id === turnId && event.type === "turn_finished") finished = true
    return mine ? print(event) : Effect.void
  }, (event) => finished && event.type === "idle")
}

const prompt = Command.make("prompt", {
  machine: machineArg,
  text: textArg,
  provider: Options.choice("provider", ["claude_code", "codex", "opencode"]).pipe(
    Options.optional,
    Options.withDescription("The agent, for a new conversation")
  ),
  model: Options.text("model").pipe(
    Options.optional,
    Options.withDescription("The model id (see `svc agent models`; default: the provider's)")
  ),
  effort: Options.choice("effort", ["minimal", "low", "medium", "high"]).pipe(
    Options.optional,
    Options.withDescription("How hard the model reasons (default: the provider's)")
  ),
  conversation: Options.text("conversation").pipe(Options.optional, Options.withDescription("Continue this one")),
  attach: Options.file("attach", { exists: "yes" }).pipe(
    Options.repeated,
    Options.withDescription("A file for the agent to read (repeatable)")
  ),
  noFollow: Options.boolean("no-follow").pipe(Options.withDescription("Answer the turn at once, do not follow it")),
  json
}, (flags) =>
  Effect.gen(function*() {
    if (Option.isNone(flags.provider) && Option.isNone(flags.conversation)) {
      return yield* new UsageError({ message: "a new conversation needs --provider (or give --conversation ID)" })
    }
    const text = yield* readText(flags.text)
    const { client, id } = yield* withMachine(flags.machine)
    const some = <A>(key: string, value: Option.Option<A>) =>
      Option.match(value, { onNone: () => ({}), onSome: (v) => ({ [key]: v }) })
    const turn = yield* client.agents.prompt({
      path: { id },
      payload: {
        text,
        ...some("provider", flags.provider),
        ...some("model", flags.model),
        ...some("reasoning_effort", flags.effort),
        ...some("conversation_id", flags.conversation),
        ...(flags.attach.length === 0 ? {} : {
          attachments: flags.attach.map((file) => ({
            name: NodePath.basename(file),
            data_base64: NodeFs.readFileSync(file).toString("base64")
          }))
        })
      }
    })
    if (flags.noFollow) return yield* flags.json ? printJson(turn) : stdout(`${turn.conversation_id}\n`)
    if (!flags.json) yield* stderr(`conversation ${turn.conversation_id}, turn ${turn.turn_id}\n`)
    // Ctrl-C interrupts this fiber: the finalizer asks the agent to stop and follows the turn to its end.
    const interrupted = Effect.gen(function*() {
      process.exitCode = 130
      yield* stderr("\ninterrupting the turn (Ctrl-C again to leave at once)\n")
      yield* Effect.ignore(
        client.agents.interrupt({ path: { id }, payload: { conversation_id: turn.conversation_id } })
      )
      yield* Effect.ignore(
        Effect.timeout(followTurn(client, id, turn.conversation_id, turn.turn_id, flags.json), "60 seconds")
      )
    })
    const last = yield* followTurn(client, id, turn.conversation_id, turn.turn_id, flags.json).pipe(
      Effect.onInterrupt(() => interrupted)
    )
    const status = last.latest_turn?.turn_id === turn.turn_id ? last.latest_turn.status : undefined
    if (status === "interrupted") return yield* new CommandFailed({ message: "", exitCode: 130 })
    if (status === "failed") {
      return yield* new CommandFailed({ message: `the turn failed: ${last.latest_turn?.error_code ?? "unknown"}` })
    }
  })).pipe(Command.withDescription("Prompt a coding agent in a running machine and follow its answer to the end"))

const events = Command.make("events", {
  machine: machineArg,
  conversation: conversationArg,
  cursor: Options.integer("cursor").pipe(Options.withDefault(0), Options.withDescription("Events after this one")),
  follow: Options.boolean("follow").pipe(Options.withDescription("Keep following until the conversation is idle")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    if (flags.follow) {
      return yield* followEvents(client, id, flags.conversation, flags.cursor, printEvent(flags.json), (event) =>
        event.type === "idle")
    }
    const page = yield* client.agents.events({
      path: { id },
      urlParams: { conversation_id: flags.conversation, cursor: String(flags.cursor) }
    }) as Effect.Effect<AgentEventsDto, unknown>
    if (flags.json) {
      return yield* printJson(page)
    }
    yield* Effect.forEach(page.events, show, { discard: true })
  })).pipe(Command.withDescription("Print a conversation's events (--follow: until it is idle)"))

const accepted = (asJson: boolean) => (answer: { readonly kind: string; readonly input_id: string }) =>
  asJson ? printJson(answer) : stdout(`${answer.kind} accepted: ${answer.input_id}\n`)

const steer = Command.make("steer", { machine: machineArg, conversation: conversationArg, text: textArg, json }, (
  flags
) =>
  Effect.gen(function*() {
    const text = yield* readText(flags.text)
    const { client, id } = yield* withMachine(flags.machine)
    yield* accepted(flags.json)(
      yield* client.agents.steer({ path: { id }, payload: { conversation_id: flags.conversation, text } })
    )
  })).pipe(Command.withDescription("Send more text to the running turn"))

const interrupt = Command.make("interrupt", {
  machine: machineArg,
  conversation: conversationArg,
  force: Options.boolean("force").pipe(Options.withDescription("Kill the agent at once")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    yield* accepted(flags.json)(
      yield* client.agents.interrupt({
        path: { id },
        payload: { conversation_id: flags.conversation, ...(flags.force ? { force: true } : {}) }
      })
    )
  })).pipe(Command.withDescription("Stop the running turn"))

type Conversation = AgentConversationDto

const conversationColumns: ReadonlyArray<Column<Conversation>> = [
  { header: "id", value: (c) => c.id },
  { header: "provider", value: (c) => c.provider },
  { header: "status", value: (c) => c.status },
  { header: "turns", value: (c) => c.turn_count },
  { header: "updated", value: (c) => time(c.updated_at) }
]

const conversations = Command.make("conversations", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const all: Array<Conversation> = []
    let cursor: string | undefined
    do {
      const page = yield* client.agents.conversations({
        path: { id },
        urlParams: { limit: "100", ...(cursor === undefined ? {} : { cursor }) }
      })
      all.push(...page.conversations)
      cursor = page.next_cursor ?? undefined
    } while (cursor !== undefined)
    yield* printList(flags.json, all, conversationColumns)
  })).pipe(Command.withDescription("List a machine's agent conversations"))

interface ModelRow {
  readonly provider: string
  readonly available: boolean
  readonly model: string
  readonly name: string
  readonly isDefault: boolean
}

const models = Command.make("models", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const answer = yield* client.agents.providerModels()
    if (flags.json) return yield* printJson(answer)
    const rows: Array<ModelRow> = answer.providers.flatMap((p) =>
      p.models.map((m) => ({
        provider: p.provider,
        available: p.available,
        model: m.id,
        name: m.name,
        isDefault: m.id === p.default_model
      }))
    )
    yield* printList(false, rows, [
      { header: "provider", value: (r) => r.provider },
      { header: "installed", value: (r) => r.available ? "yes" : "no" },
      { header: "model", value: (r) => r.model + (r.isDefault ? " (default)" : "") },
      { header: "name", value: (r) => r.name }
    ])
  })).pipe(Command.withDescription("List the agents and their models"))

export const agent = Command.make("agent").pipe(
  Command.withDescription("Coding agents in machines: prompt, follow, steer, interrupt"),
  Command.withSubcommands([prompt, events, steer, interrupt, conversations, models])
)
