/**
 * A machine's coding agents: its conversations, and one conversation live: the prompt (provider,
 * model, effort), the events as the agent makes them (the events route's server-sent stream), steer
 * and interrupt while a turn runs. `…/agents/new` starts a conversation; its first prompt names it.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { describe, get, postOnce, stream } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import { go, href } from "../route.js"
import type { AgentEvent, AgentTurn, ConversationPage, InputAccepted, Machine, ProviderModels } from "../types.js"
import { ErrorLine, Listed, TableHead, when } from "../ui.js"

export const AgentsTab = (
  { machine, organization, conversation, can }: {
    machine: Machine
    organization: string
    conversation: string | undefined
    can: Abilities
  }
) => {
  if (!can.changeMachines) return <p class="empty">Your role cannot use the agents of a machine.</p>
  if (conversation !== undefined) {
    return (
      <ConversationView
        key={conversation}
        machine={machine}
        organization={organization}
        id={conversation === "new" ? undefined : conversation}
      />
    )
  }
  return <Conversations machine={machine} organization={organization} />
}

const Conversations = ({ machine, organization }: { machine: Machine; organization: string }) => {
  const list = useLoad(
    () => get<ConversationPage>(`/v1/machines/${machine.id}/agents/conversations?limit=100`),
    [machine.id],
    3_000
  )
  return (
    <>
      <div class="title-row">
        <h2 id="conversations-title">Conversations</h2>
        <a class="button" href={href(organization, "machines", machine.id, "agents", "new")}>New conversation</a>
      </div>
      <Listed
        loaded={list}
        items={(page) => page.conversations}
        loading="Loading conversations…"
        empty="No conversations yet. Press “New conversation” to prompt an agent in this machine."
      >
        {(conversations) => (
          <div class="table-wrap">
            <table aria-labelledby="conversations-title">
              <TableHead columns={["Started", "Agent", "Status", "Turns", "Updated"]} />
              <tbody>
                {conversations.map((conversation) => (
                  <tr key={conversation.id} aria-label={`Conversation of ${when(conversation.created_at)}`}>
                    <th scope="row">{when(conversation.created_at)}</th>
                    <td>{conversation.provider}</td>
                    <td>{conversation.status}</td>
                    <td>{conversation.turn_count}</td>
                    <td>{when(conversation.updated_at)}</td>
                    <td>
                      <a href={href(organization, "machines", machine.id, "agents", conversation.id)}>Open</a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
    </>
  )
}

/**
 * The conversation's events, followed as they come: the stream ends once no turn runs (with an
 * `idle`) and is opened again, past the last event seen, when a prompt starts a turn.
 */
const useEvents = (machineId: string, conversationId: string | undefined) => {
  const [events, setEvents] = useState<ReadonlyArray<AgentEvent>>([])
  const [following, setFollowing] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const seen = useRef(new Set<string>())
  const last = useRef<string | undefined>(undefined)
  const open = useRef<AbortController | undefined>(undefined)
  const again = useRef(false)
  const follow = useCallback(() => {
    if (conversationId === undefined) return
    if (open.current !== undefined) return void (again.current = true)
    const abort = new AbortController()
    open.current = abort
    again.current = false
    setFollowing(true)
    setError(undefined)
    const path = `/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}`
    stream(
      path,
      (message) => {
        if (message.event !== "agent") return
        const event = JSON.parse(message.data) as AgentEvent
        last.current = message.id ?? last.current
        if (seen.current.has(event.id)) return
        seen.current.add(event.id)
        setEvents((list) => [...list, event])
      },
      abort.signal,
      last.current
    ).catch((failure) => abort.signal.aborted || setError(describe(failure))).finally(
      () => {
        if (open.current !== abort) return
        open.current = undefined
        setFollowing(false)
        if (again.current) follow()
      }
    )
  }, [machineId, conversationId])
  useEffect(() => {
    follow()
    return () => {
      open.current?.abort()
      open.current = undefined
    }
  }, [follow])
  return { events, following, error, follow }
}

const ConversationView = (
  { machine, organization, id }: { machine: Machine; organization: string; id: string | undefined }
) => {
  const { events, following, error, follow } = useEvents(machine.id, id)
  const [steered, setSteered] = useState<ReadonlyMap<string, string>>(new Map())
  const turns = events.filter((event) => event.type === "turn_started").length
  const finished = events.filter((event) => event.type === "turn_finished").length
  const running = turns > finished
  const provider = events.find((event) => event.type === "turn_started")?.provider ?? undefined
  const log = useRef<HTMLOListElement>(null)
  useEffect(() => log.current?.lastElementChild?.scrollIntoView({ block: "nearest" }), [events.length])
  return (
    <>
      <p>
        <a href={href(organization, "machines", machine.id, "agents")}>← Conversations</a>
      </p>
      <h2>{id === undefined ? "New conversation" : `Conversation with ${provider ?? "the agent"}`}</h2>
      {machine.state === "running"
        ? null
        : <p class="empty">Agents run in a running machine: start it to follow or prompt this conversation.</p>}
      <ErrorLine error={error} />
      {id === undefined ? null : (
        <>
          <p role="status" class="muted">
            {running
              ? "The agent is working…"
              : following
              ? "Reading the conversation…"
              : "Idle: the agent waits for a prompt."}
          </p>
          <ol class="events" aria-label="Events" ref={log}>
            {events.map((event) => <EventItem key={event.id} event={event} steered={steered} />)}
          </ol>
        </>
      )}
      {running && id !== undefined
        ? (
          <Steer
            machine={machine}
            conversation={id}
            said={(accepted, text) => setSteered((map) => new Map(map).set(accepted.input_id, text))}
          />
        )
        : (
          <Prompt
            machine={machine}
            conversation={id}
            fixedProvider={provider}
            started={(turn) =>
              id === undefined ? go(organization, "machines", machine.id, "agents", turn.conversation_id) : follow()}
          />
        )}
    </>
  )
}

const usageLine = (usage: NonNullable<AgentEvent["usage"]>) =>
  `${usage.input_tokens} tokens in (${usage.cached_input_tokens} cached), ${usage.output_tokens} out, ` +
  `$${(usage.cost_micro_usd / 1e6).toFixed(4)}`

const EventItem = ({ event, steered }: { event: AgentEvent; steered: ReadonlyMap<string, string> }) => {
  switch (event.type) {
    case "turn_started":
      return (
        <li class="event prompt">
          <span class="muted">
            You ({event.model ?? "default model"}
            {event.reasoning_effort ? `, ${event.reasoning_effort}` : ""}):
          </span>
          <p>{event.text}</p>
        </li>
      )
    case "message":
      return (
        <li class="event message">
          <p>{event.text}</p>
        </li>
      )
    case "reasoning":
      return <li class="event muted">Thinking: {event.text}</li>
    case "tool_call":
      return (
        <li class="event tool">
          <span class="muted">Tool {event.name}:</span>
          <pre class="output">{event.input}</pre>
        </li>
      )
    case "tool_result":
      return (
        <li class={`event tool${event.is_error ? " error" : ""}`}>
          <span class="muted">Result:</span>
          <pre class="output">{event.output ?? event.result}</pre>
        </li>
      )
    case "usage":
      return <li class="event muted">{event.usage === undefined ? "Usage" : usageLine(event.usage)}</li>
    case "input_accepted":
      return (
        <li class="event muted">
          {event.kind === "interrupt"
            ? "Interrupt accepted."
            : `Steer accepted: ${steered.get(event.input_id ?? "") ?? ""}`}
        </li>
      )
    case "error":
      return <li class="event error">{event.message ?? "The agent failed"}{event.code ? ` (${event.code})` : ""}</li>
    case "turn_finished":
      return <li class="event muted">Turn {event.outcome ?? "finished"}.</li>
    default:
      return null
  }
}

const Prompt = (
  { machine, conversation, fixedProvider, started }: {
    machine: Machine
    conversation: string | undefined
    fixedProvider: string | undefined
    started: (turn: AgentTurn) => void
  }
) => {
  const models = useLoad(() => get<ProviderModels>("/v1/provider-models"), [])
  const [chosen, setChosen] = useState<string | undefined>(undefined)
  const action = useAction()
  const providers = models.data?.providers ?? []
  const provider = providers.find((entry) => entry.provider === (fixedProvider ?? chosen)) ??
    providers.find((entry) => entry.available) ?? providers[0]
  const submit = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const data = new FormData(form)
    const text = (name: string) => String(data.get(name) ?? "").trim()
    void action.run(async () => {
      const turn = await postOnce<AgentTurn>(`/v1/machines/${machine.id}/agents/prompt`, {
        conversation_id: conversation ?? null,
        provider: conversation === undefined ? provider?.provider ?? null : null,
        model: text("model") === "" ? null : text("model"),
        reasoning_effort: text("effort") === "" ? null : text("effort"),
        text: text("text")
      })
      form.reset()
      started(turn)
    })
  }
  return (
    <form class="card form" onSubmit={submit} aria-label="Prompt the agent">
      <ErrorLine error={models.error} />
      <label for="agent-provider">Agent</label>
      <select
        id="agent-provider"
        name="provider"
        disabled={fixedProvider !== undefined}
        value={provider?.provider}
        onChange={(event) => setChosen((event.currentTarget as HTMLSelectElement).value)}
      >
        {providers.map((entry) => (
          <option value={entry.provider} disabled={!entry.available}>
            {entry.provider}
            {entry.available ? ` ${entry.version ?? ""}` : " (not installed)"}
          </option>
        ))}
      </select>
      <label for="agent-model">Model</label>
      <select id="agent-model" name="model" key={provider?.provider}>
        <option value="">Default ({provider?.default_model ?? "the agent's"})</option>
        {(provider?.models ?? []).map((model) => <option value={model.id}>{model.name}</option>)}
      </select>
      <label for="agent-effort">Effort</label>
      <select id="agent-effort" name="effort" key={provider?.provider}>
        <option value="">Default</option>
        {(provider?.reasoning_efforts ?? []).map((effort) => <option value={effort}>{effort}</option>)}
      </select>
      <label for="agent-text">Prompt</label>
      <textarea
        id="agent-text"
        name="text"
        rows={4}
        required
        onKeyDown={(event) => {
          // Ctrl+Enter (⌘+Enter) sends, as in most chat boxes; Enter alone makes a new line.
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
            event.preventDefault()
            ;(event.currentTarget as HTMLTextAreaElement).form?.requestSubmit()
          }
        }}
      />
      <button type="submit" disabled={action.busy || machine.state !== "running" || provider === undefined}>
        {action.busy ? "Sending…" : "Send"}
      </button>
      <ErrorLine error={action.error} />
    </form>
  )
}

const Steer = (
  { machine, conversation, said }: {
    machine: Machine
    conversation: string
    said: (accepted: InputAccepted, text: string) => void
  }
) => {
  const action = useAction()
  const [asked, setAsked] = useState<string | undefined>(undefined)
  const submit = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const text = String(new FormData(form).get("steer") ?? "").trim()
    void action.run(async () => {
      said(
        await postOnce<InputAccepted>(`/v1/machines/${machine.id}/agents/steer`, {
          conversation_id: conversation,
          text
        }),
        text
      )
      form.reset()
    })
  }
  const interrupt = (force: boolean) =>
    action.run(async () => {
      await postOnce<InputAccepted>(`/v1/machines/${machine.id}/agents/interrupt`, {
        conversation_id: conversation,
        force
      })
      setAsked(force ? "Stopping the agent now." : "Asked the agent to stop.")
    })
  return (
    <form class="card form" onSubmit={submit} aria-label="Steer the agent">
      <label for="agent-steer">Steer the running turn</label>
      <textarea id="agent-steer" name="steer" rows={2} required />
      <button type="submit" disabled={action.busy}>Steer</button>
      <button type="button" class="danger" disabled={action.busy} onClick={() => void interrupt(false)}>
        Interrupt
      </button>
      <button type="button" class="danger" disabled={action.busy} onClick={() => void interrupt(true)}>
        Stop now
      </button>
      {asked === undefined ? null : <p role="status">{asked}</p>}
      <ErrorLine error={action.error} />
    </form>
  )
}

/** Any member: the agents this server runs, their models and efforts. */
export const ModelsView = ({ organization }: { organization: string }) => {
  const models = useLoad(() => get<ProviderModels>("/v1/provider-models"), [organization])
  return (
    <section aria-labelledby="models-title">
      <h1 id="models-title">Agents and models</h1>
      <Listed
        loaded={models}
        items={(data) => data.providers}
        loading="Loading the models…"
        empty="No agents on this server."
      >
        {(providers) =>
          providers.map((provider) => (
            <article class="card" aria-labelledby={`provider-${provider.provider}`} key={provider.provider}>
              <h2 id={`provider-${provider.provider}`}>{provider.provider}</h2>
              <p class="muted">
                {provider.available
                  ? `Installed (${provider.version ?? "version unknown"})`
                  : "Not installed on this server"}; steer {provider.steer}; default model{" "}
                {provider.default_model}; efforts {provider.reasoning_efforts.join(", ") || "none"}.
              </p>
              <div class="table-wrap">
                <table aria-label={`Models of ${provider.provider}`}>
                  <thead>
                    <tr>
                      <th scope="col">Model</th>
                      <th scope="col">Vendor</th>
                      <th scope="col">Context</th>
                      <th scope="col">Reasoning</th>
                      <th scope="col">Attachments</th>
                      <th scope="col">Released</th>
                    </tr>
                  </thead>
                  <tbody>
                    {provider.models.map((model) => (
                      <tr key={model.id}>
                        <th scope="row" title={model.id}>{model.name}</th>
                        <td>{model.provider}</td>
                        <td>{model.context_tokens.toLocaleString()}</td>
                        <td>{model.reasoning ? "yes" : "no"}</td>
                        <td>{model.attachments ? "yes" : "no"}</td>
                        <td>{model.release_date}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </article>
          ))}
      </Listed>
    </section>
  )
}
