/**
 * A machine: its state (polled), its actions, a command run with its output, files up and down,
 * ports, recent operations, and the terminal (loaded on demand: xterm.js is a chunk of its own).
 */
import { lazy, Suspense } from "preact/compat"
import { useState } from "preact/hooks"
import { call, get, post, stream } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import { go, href } from "../route.js"
import type { Accepted, Machine, Operation, OperationPage, PortToken } from "../types.js"
import { decode64, ErrorLine, StateBadge, when } from "../ui.js"
import { AgentsTab } from "./Agents.js"
import { MachineActions } from "./Machines.js"
import { MachineSnapshots } from "./Snapshots.js"

const Terminal = lazy(() => import("./Terminal.js").then((module) => module.TerminalView))

const finished = (operation: Operation) =>
  operation.status === "succeeded" || operation.status === "failed" || operation.status === "correlation_miss"

/** Reads the operation until it is over: every 250 ms growing to 2 s, as the CLI waits. */
export const settle = async (id: string, seen?: (operation: Operation) => void) => {
  for (let pause = 250;; pause = Math.min(pause * 2, 2_000)) {
    const operation = await get<Operation>(`/v1/operations/${id}`)
    seen?.(operation)
    if (finished(operation)) return operation
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
}

export const MachineView = (
  { organization, id, tab, rest, can }: {
    organization: string
    id: string
    tab: string
    /** What follows the tab in the path: a conversation under `agents`. */
    rest: string | undefined
    can: Abilities
  }
) => {
  const machine = useLoad(() => get<Machine>(`/v1/machines/${id}`), [id], 2_000)
  const m = machine.data
  if (m === undefined) {
    return machine.error === undefined
      ? <p aria-busy="true">Loading…</p>
      : <ErrorLine error={machine.error} />
  }
  const tabs = ["overview", "terminal", "agents", "files", "snapshots", "operations"] as const
  return (
    <section aria-labelledby="machine-title">
      <p>
        <a href={href(organization, "machines")}>← Machines</a>
      </p>
      <div class="title-row">
        <h1 id="machine-title">{m.name}</h1>
        <StateBadge state={m.state} />
      </div>
      <MachineActions machine={m} can={can} reload={machine.reload} deleted={() => go(organization, "machines")} />
      {can.changeMachines ? <MoreActions machine={m} organization={organization} reload={machine.reload} /> : null}
      <nav class="tabs" aria-label="Machine">
        {tabs.map((name) => (
          <a href={href(organization, "machines", id, name)} aria-current={tab === name ? "page" : undefined}>
            {name === "terminal" ? "Terminal" : name[0]!.toUpperCase() + name.slice(1)}
          </a>
        ))}
      </nav>
      <ErrorLine error={machine.error} />
      {tab === "terminal"
        ? m.state !== "running"
          ? <p class="empty">The terminal opens in a running machine. {can.changeMachines ? "Start it first." : ""}</p>
          : can.changeMachines
          ? (
            <Suspense fallback={<p aria-busy="true">Loading the terminal…</p>}>
              <Terminal machineId={id} />
            </Suspense>
          )
          : <p class="empty">Your role cannot open terminals.</p>
        : tab === "agents"
        ? <AgentsTab machine={m} organization={organization} conversation={rest} can={can} />
        : tab === "files"
        ? <Files machine={m} can={can} />
        : tab === "snapshots"
        ? <MachineSnapshots machine={m} organization={organization} can={can} />
        : tab === "operations"
        ? <Operations id={id} />
        : <Overview machine={m} can={can} />}
    </section>
  )
}

const MoreActions = (
  { machine, organization, reload }: { machine: Machine; organization: string; reload: () => unknown }
) => {
  const action = useAction()
  const [said, setSaid] = useState<string | undefined>(undefined)
  const act = (label: string, run: () => Promise<unknown>) => () =>
    action.run(async () => {
      setSaid(undefined)
      await run()
      setSaid(label)
      await reload()
    })
  return (
    <span class="actions">
      <button
        type="button"
        disabled={action.busy || machine.state !== "running"}
        onClick={act("Restarting.", () => post(`/v1/machines/${machine.id}/restart`))}
      >
        Restart
      </button>
      <button
        type="button"
        disabled={action.busy}
        onClick={act("Forked.", async () => {
          const name = prompt("Name of the fork", `${machine.name}-fork`.slice(0, 63))
          if (name === null) return
          const accepted = await post<Accepted>(`/v1/machines/${machine.id}/fork`, { name })
          go(organization, "machines", accepted.machine_id)
        })}
      >
        Fork
      </button>
      <button
        type="button"
        disabled={action.busy}
        onClick={act("Snapshot taken.", () => post(`/v1/machines/${machine.id}/snapshots`, {}))}
      >
        Snapshot
      </button>
      <a class="button secondary" href={href(organization, "machines", machine.id, "terminal")}>Terminal</a>
      {said === undefined ? null : <span role="status" class="ok">{said}</span>}
      <ErrorLine error={action.error} />
    </span>
  )
}

const Overview = ({ machine, can }: { machine: Machine; can: Abilities }) => (
  <>
    <dl class="facts">
      <dt>Size</dt>
      <dd>{machine.size}</dd>
      <dt>Image</dt>
      <dd>{machine.image}</dd>
      <dt>Source</dt>
      <dd>{machine.source.kind}{machine.source.id === null ? "" : ` ${machine.source.id}`}</dd>
      <dt>Internet</dt>
      <dd>{machine.internet_access ? "on" : "off"}</dd>
      <dt>Auto-stop</dt>
      <dd>{machine.auto_stop_seconds === null ? "never" : `${machine.auto_stop_seconds} s`}</dd>
      <dt>Idle sleep</dt>
      <dd>{machine.idle_sleep_seconds === null ? "never" : `${machine.idle_sleep_seconds} s`}</dd>
      <dt>Created</dt>
      <dd>{when(machine.created_at)}</dd>
      <dt>Started</dt>
      <dd>{when(machine.started_at)}</dd>
      <dt>Ports</dt>
      <dd>
        {machine.ports.length === 0
          ? "none exposed"
          : machine.ports.map((port) => (
            <a href={port.url} target="_blank" rel="noreferrer">{port.port}{port.public ? " (public)" : ""}</a>
          ))}
      </dd>
    </dl>
    {can.changeMachines ? <Exec machine={machine} /> : null}
    {can.changeMachines ? <Ports machine={machine} /> : null}
  </>
)

/**
 * A command, its output as it comes: the operation's event stream (`output` events, then `end`),
 * then the operation read once for its exit code.
 */
const Exec = ({ machine }: { machine: Machine }) => {
  const action = useAction()
  const [operation, setOperation] = useState<Operation | undefined>(undefined)
  const [output, setOutput] = useState("")
  const submit = (event: Event) => {
    event.preventDefault()
    const shell = String(new FormData(event.currentTarget as HTMLFormElement).get("shell") ?? "")
    void action.run(async () => {
      setOperation(undefined)
      setOutput("")
      const accepted = await post<Accepted>(`/v1/machines/${machine.id}/exec`, { shell })
      const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() }
      const abort = new AbortController()
      await stream(`/v1/operations/${accepted.operation_id}/events`, (message) => {
        if (message.event === "output") {
          const chunk = JSON.parse(message.data) as { stream: "stdout" | "stderr"; data_base64: string }
          const bytes = Uint8Array.from(atob(chunk.data_base64), (c) => c.charCodeAt(0))
          const text = (decoders[chunk.stream] ?? decoders.stdout).decode(bytes, { stream: true })
          setOutput((before) => before + text)
        } else if (message.event === "status") {
          setOperation((before) => before === undefined ? undefined : { ...before, ...JSON.parse(message.data) })
        } else if (message.event === "end") abort.abort()
      }, abort.signal).catch((failure) => {
        if (!abort.signal.aborted) throw failure
      })
      await settle(accepted.operation_id, setOperation)
    })
  }
  const result = operation?.exec_result ?? null
  const shown = output !== "" || result === null
    ? output
    : decode64(result.stdout_base64) + decode64(result.stderr_base64)
  return (
    <form class="card form" onSubmit={submit} aria-label="Run a command">
      <label for="exec-shell">Command</label>
      <input id="exec-shell" name="shell" required autocomplete="off" placeholder="uname -a" class="mono" />
      <button type="submit" disabled={action.busy || machine.state !== "running"}>
        {action.busy ? "Running…" : "Run"}
      </button>
      {operation === undefined
        ? action.busy ? <p role="status">Running…</p> : null
        : (
          <p role="status">
            Operation {operation.status}
            {operation.error_code === null ? "" : ` (${operation.error_code})`}
          </p>
        )}
      {result === null ? null : (
        <p>
          Exit code {result.exit_code}
          {result.timed_out ? ", timed out" : ""}
          {result.truncated ? ", output truncated" : ""}
        </p>
      )}
      {shown === "" && !action.busy ? null : <pre class="output" aria-label="Output" aria-live="polite">{shown}</pre>}
      <ErrorLine error={action.error} />
    </form>
  )
}

/** Expose a port; for each private one, a token that opens it for an hour; stop exposing. */
const Ports = ({ machine }: { machine: Machine }) => {
  const action = useAction()
  const [token, setToken] = useState<(PortToken & { port: number }) | undefined>(undefined)
  const submit = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    void action.run(() =>
      post(`/v1/machines/${machine.id}/ports`, { port: Number(form.get("port")), public: form.get("public") === "on" })
    )
  }
  return (
    <>
      {machine.ports.length === 0 ? null : (
        <ul class="plain" aria-label="Exposed ports">
          {machine.ports.map((port) => (
            <li key={port.port}>
              Port {port.port} {port.public ? "(public)" : "(private)"} {port.public ? null : (
                <button
                  type="button"
                  class="secondary"
                  disabled={action.busy}
                  onClick={() =>
                    void action.run(async () => {
                      const made = await post<PortToken>(`/v1/machines/${machine.id}/ports/${port.port}/tokens`, {
                        expires_in_seconds: 3600
                      })
                      // The token opens the port as a query parameter (or the x-svc-port-token header).
                      const link = `${made.url}${made.url.includes("?") ? "&" : "?"}svc_port_token=${
                        encodeURIComponent(made.token)
                      }`
                      setToken({ ...made, url: link, port: port.port })
                    })}
                >
                  Token for port {port.port}
                </button>
              )}
              <button
                type="button"
                class="danger"
                disabled={action.busy}
                onClick={() => void action.run(() => call("DELETE", `/v1/machines/${machine.id}/ports/${port.port}`))}
              >
                Stop exposing {port.port}
              </button>
            </li>
          ))}
        </ul>
      )}
      {token === undefined ? null : (
        <div class="card secret" role="status">
          <p>
            A link to port {token.port} that works without signing in until{" "}
            {when(token.expires_at)}: it is not shown again.
          </p>
          <code class="mono">{token.url}</code>
          <button type="button" class="secondary" onClick={() => void navigator.clipboard.writeText(token.url)}>
            Copy
          </button>
        </div>
      )}
      <form class="card form" onSubmit={submit} aria-label="Expose a port">
        <label for="port-number">Port</label>
        <input id="port-number" name="port" type="number" min="1" max="65535" required inputmode="numeric" />
        <label class="check">
          <input type="checkbox" name="public" /> Public (no sign-in needed)
        </label>
        <button type="submit" disabled={action.busy}>Expose</button>
        <ErrorLine error={action.error} />
      </form>
    </>
  )
}

const toBase64 = (bytes: Uint8Array) => {
  let text = ""
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(text)
}

const Files = ({ machine, can }: { machine: Machine; can: Abilities }) => {
  const action = useAction()
  const [said, setSaid] = useState<string | undefined>(undefined)
  if (!can.changeMachines) return <p class="empty">Your role cannot read or write files.</p>
  if (machine.state !== "running") return <p class="empty">Files are read and written in a running machine.</p>
  const upload = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    const file = form.get("file") as File | null
    const folder = String(form.get("folder") ?? "/root").replace(/\/$/, "")
    if (file === null || file.name === "") return
    void action.run(async () => {
      const accepted = await post<Accepted>(`/v1/machines/${machine.id}/files/write`, {
        path: `${folder}/${file.name}`,
        data_base64: toBase64(new Uint8Array(await file.arrayBuffer()))
      })
      const done = await settle(accepted.operation_id)
      setSaid(
        done.status === "succeeded" ? `Uploaded ${folder}/${file.name}.` : `Upload ${done.status} (${done.error_code}).`
      )
    })
  }
  const download = (event: Event) => {
    event.preventDefault()
    const path = String(new FormData(event.currentTarget as HTMLFormElement).get("path") ?? "")
    void action.run(async () => {
      const accepted = await post<Accepted>(`/v1/machines/${machine.id}/files/read`, { ranges: [{ path }] })
      const done = await settle(accepted.operation_id)
      const range = done.file_ranges?.[0]
      if (range === undefined || range.missing) return setSaid(`No file at ${path}.`)
      const bytes = Uint8Array.from(atob(range.data_base64), (c) => c.charCodeAt(0))
      const link = document.createElement("a")
      link.href = URL.createObjectURL(new Blob([bytes]))
      link.download = path.split("/").pop() ?? "file"
      link.click()
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
      setSaid(`Downloaded ${path}.`)
    })
  }
  return (
    <>
      <form class="card form" onSubmit={upload} aria-label="Upload a file">
        <label for="upload-file">File</label>
        <input id="upload-file" name="file" type="file" required />
        <label for="upload-folder">Into the folder</label>
        <input id="upload-folder" name="folder" defaultValue="/root" class="mono" />
        <button type="submit" disabled={action.busy}>Upload</button>
      </form>
      <form class="card form" onSubmit={download} aria-label="Download a file">
        <label for="download-path">Path</label>
        <input id="download-path" name="path" required class="mono" placeholder="/etc/os-release" />
        <button type="submit" disabled={action.busy}>Download</button>
      </form>
      {said === undefined ? null : <p role="status">{said}</p>}
      <ErrorLine error={action.error} />
    </>
  )
}

const Operations = ({ id }: { id: string }) => {
  const operations = useLoad(() => get<OperationPage>(`/v1/machines/${id}/operations?limit=50`), [id], 2_000)
  return (
    <>
      <ErrorLine error={operations.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Finished</th>
            </tr>
          </thead>
          <tbody>
            {(operations.data?.items ?? []).map((operation) => (
              <tr key={operation.id}>
                <td>{operation.kind}</td>
                <td>{operation.status}{operation.error_code === null ? "" : ` (${operation.error_code})`}</td>
                <td>{when(operation.created_at)}</td>
                <td>{when(operation.finished_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}
