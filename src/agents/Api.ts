/** Coding agents inside machines (api.md "Agents", extensions.md §8). */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { MachineString, NullableTimestamp, QueryParams, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { IdempotencyHeaders } from "../kernel/http/Dto.js"
import { EventStream } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { acceptErrors, liveHostErrors, notRunningErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { GuestActionFailed } from "../kernel/http/MachineErrors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { allowedWhileSuspended, policy, type PolicySpec } from "../kernel/http/Policy.js"
import { type ProblemClass } from "../kernel/http/Problem.js"
import { maxAttachments, maxTextBytes } from "./Bounds.js"
import { AgentsUnavailable, AgentTurnRunning, ConversationNotFound, NoActiveTurn, ProviderMismatch } from "./Errors.js"
import { AgentEvent, AgentProvider, ReasoningEffort } from "./providers/Schemas.js"

/** The agent gets it as an argument or a line of its input: no NUL byte. */
const Text = MachineString.pipe(
  Schema.filter((text) => Buffer.byteLength(text, "utf8") <= maxTextBytes || "at most 256 KiB")
)

export const AgentAttachment = Schema.Struct({
  /** A file name (no folders); the file is written into the machine under this name. */
  name: Schema.String.pipe(
    Schema.pattern(/^(?!\.\.?$)[^/\0]{1,255}$/, { message: () => "a file name without /" })
  ),
  data_base64: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9+/]*={0,2}$/, { message: () => "must be base64" })
  ),
  media_type: Schema.optional(Schema.String.pipe(Schema.maxLength(255)))
}).annotations({ identifier: "AgentAttachmentRequest" })

export const AgentPromptRequest = RequestBody({
  attachments: Schema.optionalWith(Schema.Array(AgentAttachment).pipe(Schema.maxItems(maxAttachments)), {
    default: () => []
  }),
  conversation_id: Schema.optionalWith(Schema.NullOr(Uuid), { default: () => null }),
  model: Schema.optionalWith(Schema.NullOr(MachineString.pipe(Schema.minLength(1), Schema.maxLength(200))), {
    default: () => null
  }),
  provider: Schema.optionalWith(Schema.NullOr(AgentProvider), { default: () => null }),
  reasoning_effort: Schema.optionalWith(Schema.NullOr(ReasoningEffort), { default: () => null }),
  text: Schema.optionalWith(Text, { default: () => "" })
}).annotations({ identifier: "AgentPromptRequest" })
export type AgentPromptRequest = typeof AgentPromptRequest.Type

export const AgentTurnDto = Schema.Struct({
  turn_id: Uuid,
  conversation_id: Uuid,
  machine_id: Uuid,
  status: Schema.Literal("starting", "running", "completed", "failed", "interrupted"),
  provider: AgentProvider,
  model: Schema.String,
  reasoning_effort: Schema.NullOr(ReasoningEffort),
  resume: Schema.Boolean,
  interrupt_requested: Schema.Boolean,
  events_url: Schema.String,
  error_code: Schema.NullOr(Schema.String),
  exit_code: Schema.NullOr(Schema.Int),
  created_at: Timestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp
}).annotations({ identifier: "AgentTurn" })
export type AgentTurnDto = typeof AgentTurnDto.Type

export const AgentEventsDto = Schema.Struct({
  active: Schema.Boolean,
  conversation_id: Uuid,
  cursor: Schema.Int,
  events: Schema.Array(AgentEvent),
  latest_turn: Schema.NullOr(AgentTurnDto)
}).annotations({ identifier: "AgentEvents" })
export type AgentEventsDto = typeof AgentEventsDto.Type

export const AgentConversationDto = Schema.Struct({
  id: Uuid,
  machine_id: Uuid,
  provider: AgentProvider,
  status: Schema.Literal("idle", "running"),
  turn_count: Schema.Int,
  events_url: Schema.String,
  latest_turn: Schema.NullOr(AgentTurnDto),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "AgentConversation" })
export type AgentConversationDto = typeof AgentConversationDto.Type

export const AgentConversationListDto = Schema.Struct({
  conversations: Schema.Array(AgentConversationDto),
  next_cursor: Schema.NullOr(Uuid)
}).annotations({ identifier: "AgentConversationList" })

export const AgentInputAccepted = Schema.Struct({
  conversation_id: Uuid,
  turn_id: Uuid,
  input_id: Uuid,
  kind: Schema.Literal("steer", "interrupt"),
  stopped: Schema.Boolean
}).annotations({ identifier: "AgentInputAccepted" })
export type AgentInputAccepted = typeof AgentInputAccepted.Type

export const SteerRequest = RequestBody({ conversation_id: Uuid, text: Text })
export const InterruptRequest = RequestBody({
  conversation_id: Uuid,
  force: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

export const ProviderModel = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  provider: Schema.String,
  attachments: Schema.Boolean,
  reasoning: Schema.Boolean,
  context_tokens: Schema.Int,
  release_date: Schema.String
}).annotations({ identifier: "ProviderModel" })

export const ProviderModelsDto = Schema.Struct({
  source: Schema.Literal("live", "bundled"),
  providers: Schema.Array(Schema.Struct({
    provider: AgentProvider,
    /** Whether the agent is installed on this server (`svc agents install`), and its version. */
    available: Schema.Boolean,
    version: Schema.NullOr(Schema.String),
    /** `live`: steer reaches the running agent; `queued`: it runs right after the agent's current step. */
    steer: Schema.Literal("live", "queued"),
    default_model: Schema.String,
    reasoning_efforts: Schema.Array(ReasoningEffort),
    models: Schema.Array(ProviderModel)
  }))
}).annotations({ identifier: "ProviderModels" })
export type ProviderModelsDto = typeof ProviderModelsDto.Type

// The routes

const MachinePath = Schema.Struct({ id: Uuid })
const changers = policy("U", "header", Roles.machineChangers)

/** The 202 routes: idempotency key, the machine's state, the conversation. */
const turnChange = <
  const Name extends string,
  const Path extends `/v1/machines/:id/agents/${string}`,
  const Extra extends ReadonlyArray<ProblemClass<any>>
>(
  name: Name,
  path: Path,
  text: { readonly summary: string; readonly description: string },
  extra: Extra,
  routePolicy: PolicySpec = changers
) =>
  Endpoint.post(name, path, {
    ...text,
    policy: routePolicy,
    errors: [
      ...acceptErrors,
      ConversationNotFound,
      ...notRunningErrors,
      GuestActionFailed,
      AgentsUnavailable,
      ...liveHostErrors,
      ...extra
    ]
  })
    .setPath(MachinePath)
    .setHeaders(IdempotencyHeaders)

export const EventsParams = QueryParams({
  conversation_id: Uuid,
  cursor: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()), {
    default: () => 0
  }),
  wait_seconds: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(0, 30)), {
    default: () => 0
  })
})

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(
    turnChange("prompt", "/v1/machines/:id/agents/prompt", {
      summary: "Prompt an agent",
      description: "Starts a turn of a coding agent in the running machine: a new conversation (`provider` " +
        "required) or `conversation_id`'s, which keeps its provider. `text` at most 256 KiB, no NUL byte; " +
        "at most 16 attachments, 16 MiB together, written to the machine for the agent to read. The agent's " +
        "provider keys are the machine's environment variables. Answers 202 with the turn; follow " +
        "`events_url`. [IDEM]: the same `Idempotency-Key` answers the same turn."
    }, [AgentTurnRunning, ProviderMismatch])
      .setPayload(AgentPromptRequest)
      .addSuccess(AgentTurnDto, { status: 202 })
  )
  .add(
    turnChange("steer", "/v1/machines/:id/agents/steer", {
      summary: "Steer the running turn",
      description: "Writes `text` (at most 256 KiB) to the running turn's inbox; the agent confirms with an " +
        "`input_accepted` event carrying the answer's `input_id`. 409 `no_active_turn` when no turn runs."
    }, [NoActiveTurn])
      .setPayload(SteerRequest)
      .addSuccess(AgentInputAccepted, { status: 202 })
  )
  .add(
    turnChange(
      "interrupt",
      "/v1/machines/:id/agents/interrupt",
      {
        summary: "Interrupt the running turn",
        description: "Ends the running turn with outcome `interrupted`: the agent gets 10 s, then SIGTERM, then " +
          "SIGKILL; with `force` the runner and agent are killed at once."
      },
      [NoActiveTurn],
      allowedWhileSuspended(changers)
    )
      .setPayload(InterruptRequest)
      .addSuccess(AgentInputAccepted, { status: 202 })
  )
  .add(
    Endpoint.get("events", "/v1/machines/:id/agents/events", {
      summary: "Read a conversation's events",
      description: "JSON: the events after `cursor` (0 is the conversation's first), waiting up to " +
        "`wait_seconds` (0-30) when none is ready. With `Accept: text/event-stream`: a stream of `agent` " +
        "events, each `id` the cursor after it (`Last-Event-ID` resumes), ending with an `idle` event once no " +
        "turn runs and every event was sent.",
      policy: changers,
      errors: [ResourceNotFound, ConversationNotFound, ...liveHostErrors]
    })
      .setPath(MachinePath)
      .setUrlParams(EventsParams)
      .setHeaders(Schema.Struct({
        accept: Schema.optional(Schema.String),
        "last-event-id": Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
      }))
      .addSuccess(AgentEventsDto)
      .addSuccess(EventStream)
  )
  .add(
    Endpoint.get("conversations", "/v1/machines/:id/agents/conversations", {
      summary: "List conversations",
      description: "The machine's agent conversations, a page at a time (`limit` 1-100, `cursor` the previous " +
        "page's `next_cursor`).",
      policy: changers,
      errors: [ResourceNotFound]
    })
      .setPath(MachinePath)
      .setUrlParams(QueryParams(pageFields(Uuid)))
      .addSuccess(AgentConversationListDto)
  )
  .add(
    Endpoint.get("providerModels", "/v1/provider-models", {
      summary: "List agents and models",
      description: "Each agent (provider): whether it is installed, its models and reasoning efforts. `source` " +
        "is `live` when the list came from the installed agents just now, `bundled` from svc's catalogue.",
      policy: policy("R", "header", Roles.anyMember)
    })
      .addSuccess(ProviderModelsDto)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Agents: run a coding agent (claude_code, codex, opencode) in a running machine; prompt, follow, steer, " +
      "interrupt."
  )
{}
