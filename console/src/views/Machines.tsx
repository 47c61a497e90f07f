/** The organization's machines: a live list (polled every 2 s) and the "New machine" form. */
import { useState } from "preact/hooks"
import { del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import { go, href } from "../route.js"
import type { Accepted, CreateMachine, Environment, Machine, MachinePage, Snapshot } from "../types.js"
import { ErrorLine, Listed, StateBadge, TableHead } from "../ui.js"

/** Machines a page: an organization of 1,000 machines reads (and polls) one page at a time. */
const pageSize = 50

export const MachineActions = (
  { machine, can, reload, deleted = reload }: {
    machine: Machine
    can: Abilities
    reload: () => unknown
    deleted?: () => unknown
  }
) => {
  const action = useAction()
  if (!can.changeMachines) return null
  const act = (verb: string) => () =>
    action.run(async () => {
      await post<Accepted>(`/v1/machines/${machine.id}/${verb}`)
      await reload()
    })
  const running = machine.state === "running" || machine.state === "starting"
  return (
    <span class="actions">
      {running
        ? <button type="button" disabled={action.busy} onClick={act("stop")}>Stop</button>
        : (
          <button type="button" disabled={action.busy || machine.state === "deleted"} onClick={act("start")}>
            Start
          </button>
        )}
      <button
        type="button"
        class="danger"
        disabled={action.busy}
        onClick={() => {
          if (!confirm(`Delete the machine ${machine.name}? Its disk is removed.`)) return
          void action.run(async () => {
            await del<Accepted>(`/v1/machines/${machine.id}`)
            await deleted()
          })
        }}
      >
        Delete
      </button>
      <ErrorLine error={action.error} />
    </span>
  )
}

export const MachinesView = ({ organization, can }: { organization: string; can: Abilities }) => {
  // The cursors of the pages before this one (the API's `next_cursor`s), to go back.
  const [cursors, setCursors] = useState<ReadonlyArray<string>>([])
  const cursor = cursors.at(-1)
  const machines = useLoad(
    () =>
      get<MachinePage>(
        `/v1/machines?limit=${pageSize}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      ),
    [organization, cursor],
    2_000
  )
  const [creating, setCreating] = useState(false)
  const next = machines.data?.next_cursor ?? null
  return (
    <section aria-labelledby="machines-title">
      <div class="title-row">
        <h1 id="machines-title">Machines</h1>
        {can.changeMachines
          ? <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>New machine</button>
          : null}
      </div>
      {creating ? <NewMachine organization={organization} onDone={() => setCreating(false)} /> : null}
      <Listed
        loaded={machines}
        items={(page) => page.items}
        loading="Loading machines…"
        empty={cursors.length > 0
          ? "No more machines."
          : can.changeMachines
          ? "No machines yet. Press “New machine” to create one."
          : "No machines yet. Ask an operator or admin to create one."}
      >
        {(items) => (
          <div class="table-wrap">
            <table class="machines" aria-labelledby="machines-title">
              <TableHead columns={["Name", "State", "Size", "Image"]} />
              <tbody>
                {items.map((machine) => (
                  <tr key={machine.id} aria-label={machine.name}>
                    <th scope="row">
                      <a href={href(organization, "machines", machine.id)}>{machine.name}</a>
                    </th>
                    <td>
                      <StateBadge state={machine.state} />
                    </td>
                    <td>{machine.size}</td>
                    <td>{machine.image}</td>
                    <td>
                      <MachineActions machine={machine} can={can} reload={machines.reload} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
      {cursors.length === 0 && next === null ? null : (
        <nav class="pager" aria-label="Pages of machines">
          <button
            type="button"
            class="secondary"
            disabled={cursors.length === 0}
            onClick={() => setCursors(cursors.slice(0, -1))}
          >
            Previous page
          </button>
          <span class="muted">Page {cursors.length + 1}</span>
          <button
            type="button"
            class="secondary"
            disabled={next === null}
            onClick={() => next !== null && setCursors([...cursors, next])}
          >
            Next page
          </button>
        </nav>
      )}
    </section>
  )
}

const NewMachine = ({ organization, onDone }: { organization: string; onDone: () => void }) => {
  const templates = useLoad(() => get<{ items: ReadonlyArray<Snapshot> }>("/v1/templates?limit=100"), [organization])
  const environments = useLoad(() => get<{ items: ReadonlyArray<Environment> }>("/v1/environments"), [organization])
  const action = useAction()
  const submit = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    const text = (name: string) => String(form.get(name) ?? "").trim()
    const seconds = (name: string) => text(name) === "" ? null : Number(text(name))
    const body: CreateMachine = {
      name: text("name"),
      size: text("size") as Machine["size"],
      template: text("template") === "" ? null : text("template"),
      environment_id: text("environment") === "" ? null : text("environment"),
      internet_access: form.get("internet") === "on",
      auto_stop_seconds: seconds("auto_stop"),
      idle_sleep_seconds: seconds("idle_sleep"),
      setup_script: text("setup") === "" ? null : text("setup"),
      start: form.get("start") === "on"
    }
    void action.run(async () => {
      const accepted = await post<Accepted>("/v1/machines", body)
      onDone()
      go(organization, "machines", accepted.machine_id)
    })
  }
  return (
    <form class="card form" onSubmit={submit} aria-label="New machine">
      <label for="new-name">Name</label>
      <input id="new-name" name="name" required pattern="[a-z0-9\-]{1,63}" autocomplete="off" placeholder="web-1" />
      <label for="new-size">Size</label>
      <select id="new-size" name="size">
        <option value="small">small</option>
        <option value="default" selected>default</option>
        <option value="large">large</option>
      </select>
      <label for="new-template">Template</label>
      <select id="new-template" name="template">
        <option value="">None (empty machine)</option>
        {(templates.data?.items ?? []).map((template) => (
          <option value={template.name ?? template.id}>{template.name ?? template.id}</option>
        ))}
      </select>
      <label for="new-environment">Environment</label>
      <select id="new-environment" name="environment">
        <option value="">None</option>
        {(environments.data?.items ?? []).map((environment) => (
          <option value={environment.id}>{environment.name} (v{environment.version})</option>
        ))}
      </select>
      <label class="check">
        <input type="checkbox" name="internet" defaultChecked /> Internet access
      </label>
      <label for="new-auto-stop">Auto-stop after (seconds, empty for never)</label>
      <input id="new-auto-stop" name="auto_stop" type="number" min="1" inputmode="numeric" />
      <label for="new-idle">Sleep when idle after (seconds, empty for never)</label>
      <input id="new-idle" name="idle_sleep" type="number" min="1" inputmode="numeric" />
      <label for="new-setup">Setup script (runs at first boot)</label>
      <textarea id="new-setup" name="setup" rows={3} />
      <label class="check">
        <input type="checkbox" name="start" defaultChecked /> Start it now
      </label>
      <div>
        <button type="submit" disabled={action.busy}>{action.busy ? "Creating…" : "Create machine"}</button>
        <button type="button" class="secondary" onClick={onDone}>Cancel</button>
      </div>
      <ErrorLine error={action.error} />
    </form>
  )
}
