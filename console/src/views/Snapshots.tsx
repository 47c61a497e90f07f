/**
 * Snapshots and templates: a machine's snapshots (restore one into a new machine, save the machine
 * as a template), and the organization's templates (delete one). New machines start from a template
 * in the "New machine" form.
 */
import { del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import { go } from "../route.js"
import type { Accepted, Machine, Snapshot } from "../types.js"
import { ErrorLine, Listed, TableHead, when } from "../ui.js"

const size = (bytes: number) =>
  bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`

export const MachineSnapshots = (
  { machine, organization, can }: { machine: Machine; organization: string; can: Abilities }
) => {
  const snapshots = useLoad(
    () => get<{ items: ReadonlyArray<Snapshot> }>(`/v1/machines/${machine.id}/snapshots?limit=50`),
    [machine.id],
    3_000
  )
  const action = useAction()
  const restore = (snapshot: Snapshot) => {
    const name = prompt("Name of the restored machine", `${machine.name}-restored`.slice(0, 63))
    if (name === null) return
    void action.run(async () => {
      const accepted = await post<Accepted>(`/v1/machines/${machine.id}/restore`, { name, snapshot_id: snapshot.id })
      go(organization, "machines", accepted.machine_id)
    })
  }
  const saveTemplate = (event: Event) => {
    event.preventDefault()
    const name = String(new FormData(event.currentTarget as HTMLFormElement).get("template") ?? "")
    void action.run(async () => {
      await post("/v1/templates", { machine_id: machine.id, name })
      await snapshots.reload()
    })
  }
  return (
    <>
      <ErrorLine error={action.error} />
      <Listed
        loaded={snapshots}
        items={(data) => data.items}
        loading="Loading snapshots…"
        empty={<>No snapshots of this machine. {can.changeMachines ? "Press “Snapshot” to take one." : ""}</>}
      >
        {(items) => (
          <div class="table-wrap">
            <table>
              <TableHead columns={["Taken", "Name", "Status", "Size"]} />
              <tbody>
                {items.map((snapshot) => (
                  <tr key={snapshot.id}>
                    <td>{when(snapshot.created_at)}</td>
                    <td>{snapshot.name ?? "—"}</td>
                    <td>{snapshot.status}{snapshot.error_code === null ? "" : ` (${snapshot.error_code})`}</td>
                    <td>{size(snapshot.size_bytes)}</td>
                    <td>
                      {can.changeMachines && snapshot.status === "ready"
                        ? (
                          <button
                            type="button"
                            class="secondary"
                            disabled={action.busy}
                            onClick={() => restore(snapshot)}
                          >
                            Restore
                          </button>
                        )
                        : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
      {!can.changeMachines ? null : (
        <form class="card form" onSubmit={saveTemplate} aria-label="Save as template">
          <label for="template-name">Template name</label>
          <input id="template-name" name="template" required pattern="[a-z0-9][a-z0-9._\-]{0,63}" autocomplete="off" />
          <button type="submit" disabled={action.busy}>Save as template</button>
        </form>
      )}
    </>
  )
}

export const TemplatesView = ({ organization, can }: { organization: string; can: Abilities }) => {
  const templates = useLoad(
    () => get<{ items: ReadonlyArray<Snapshot> }>("/v1/templates?limit=100"),
    [organization],
    5_000
  )
  const action = useAction()
  return (
    <section aria-labelledby="templates-title">
      <h1 id="templates-title">Templates</h1>
      <ErrorLine error={action.error} />
      <Listed
        loaded={templates}
        items={(data) => data.items}
        loading="Loading templates…"
        empty="No templates. Save a machine as a template from its Snapshots tab; new machines can then start from it."
      >
        {(items) => (
          <div class="table-wrap">
            <table>
              <TableHead columns={["Name", "Status", "Size", "Made"]} />
              <tbody>
                {items.map((template) => (
                  <tr key={template.id} aria-label={template.name ?? template.id}>
                    <th scope="row">{template.name ?? template.id}</th>
                    <td>{template.status}</td>
                    <td>{size(template.size_bytes)}</td>
                    <td>{when(template.created_at)}</td>
                    <td>
                      {can.changeMachines
                        ? (
                          <button
                            type="button"
                            class="danger"
                            disabled={action.busy}
                            onClick={() => {
                              if (!confirm(`Delete the template ${template.name ?? template.id}?`)) return
                              void action.run(async () => {
                                await del(`/v1/templates/${encodeURIComponent(template.name ?? template.id)}`)
                                await templates.reload()
                              })
                            }}
                          >
                            Delete
                          </button>
                        )
                        : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
    </section>
  )
}
