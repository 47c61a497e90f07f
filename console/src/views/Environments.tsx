/**
 * Environments: versioned variables for machines. Their names and versions are shown; values are
 * write-only (the API never answers them), so a form sets or removes variables by name.
 */
import { useState } from "preact/hooks"
import { call, del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { Environment } from "../types.js"
import { ErrorLine, Listed, TableHead, when } from "../ui.js"

/**
 * `NAME=value` lines set variables, `-NAME` lines remove them (null in a change); blank lines and
 * `#` comments are skipped. A value runs to the line's end, `=` and spaces included.
 */
export const parseVariables = (text: string) => {
  const variables: Record<string, string | null> = {}
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\r$/, "")
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue
    if (line.startsWith("-")) variables[line.slice(1).trim()] = null
    else {
      const equals = line.indexOf("=")
      if (equals === -1) throw new Error(`“${line.trim()}” is no NAME=value line.`)
      variables[line.slice(0, equals).trim()] = line.slice(equals + 1)
    }
  }
  return variables
}

export const EnvironmentsView = ({ organization, can }: { organization: string; can: Abilities }) => {
  const environments = useLoad(() => get<{ items: ReadonlyArray<Environment> }>("/v1/environments"), [organization])
  const [creating, setCreating] = useState(false)
  const action = useAction()
  const create = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const data = new FormData(form)
    void action.run(async () => {
      await post("/v1/environments", {
        name: String(data.get("name") ?? "").trim(),
        variables: parseVariables(String(data.get("variables") ?? ""))
      })
      form.reset()
      setCreating(false)
      await environments.reload()
    })
  }
  return (
    <section aria-labelledby="environments-title">
      <div class="title-row">
        <h1 id="environments-title">Environments</h1>
        <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>New environment</button>
      </div>
      {creating
        ? (
          <form class="card form" onSubmit={create} aria-label="New environment">
            <label for="environment-name">Name</label>
            <input id="environment-name" name="name" required maxLength={64} autocomplete="off" />
            <label for="environment-variables">Variables (one NAME=value a line)</label>
            <textarea id="environment-variables" name="variables" rows={4} class="mono" autocomplete="off" />
            <p class="muted">Values are never shown again: svc keeps them encrypted and gives them only to machines.</p>
            <button type="submit" disabled={action.busy}>Create environment</button>
          </form>
        )
        : null}
      <ErrorLine error={action.error} />
      <Listed
        loaded={environments}
        items={(data) => data.items}
        loading="Loading environments…"
        empty="No environments. Press “New environment” to keep API keys and settings for your machines."
      >
        {(items) => (
          <div class="table-wrap">
            <table>
              <TableHead columns={["Name", "Version", "Variables", "Changed"]} />
              <tbody>
                {items.map((environment) => (
                  <EnvironmentRow
                    key={environment.id}
                    environment={environment}
                    can={can}
                    reload={environments.reload}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
    </section>
  )
}

const EnvironmentRow = (
  { environment, can, reload }: { environment: Environment; can: Abilities; reload: () => Promise<void> }
) => {
  const [editing, setEditing] = useState(false)
  const [said, setSaid] = useState<string | undefined>(undefined)
  const action = useAction()
  const change = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const text = String(new FormData(form).get("variables") ?? "")
    void action.run(async () => {
      const changed = await call<Environment>("PATCH", `/v1/environments/${environment.id}`, {
        variables: parseVariables(text)
      })
      setEditing(false)
      setSaid(`Version ${changed.version} saved.`)
      await reload()
    })
  }
  return (
    <>
      <tr aria-label={environment.name}>
        <th scope="row">{environment.name}</th>
        <td>v{environment.version}</td>
        <td class="mono">{environment.variable_names.join(", ") || "none"}</td>
        <td>{when(environment.updated_at)}</td>
        <td>
          <span class="actions">
            <button type="button" class="secondary" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              Change variables
            </button>
            {can.changeMachines
              ? (
                <button
                  type="button"
                  class="secondary"
                  disabled={action.busy}
                  onClick={() =>
                    void action.run(async () => {
                      const made = await post<{ operations: ReadonlyArray<unknown> }>(
                        `/v1/environments/${environment.id}/upgrade`
                      )
                      setSaid(`${made.operations.length} machine(s) upgrading to v${environment.version}.`)
                    })}
                >
                  Upgrade machines
                </button>
              )
              : null}
            <button
              type="button"
              class="danger"
              disabled={action.busy}
              onClick={() => {
                if (!confirm(`Delete the environment ${environment.name}?`)) return
                void action.run(async () => {
                  await del(`/v1/environments/${environment.id}`)
                  await reload()
                })
              }}
            >
              Delete
            </button>
          </span>
          {said === undefined ? null : <p role="status" class="ok">{said}</p>}
          <ErrorLine error={action.error} />
        </td>
      </tr>
      {editing
        ? (
          <tr>
            <td colSpan={5}>
              <form class="form" onSubmit={change} aria-label={`Change the variables of ${environment.name}`}>
                <label for={`change-${environment.id}`}>Set (NAME=value) or remove (-NAME), one a line</label>
                <textarea id={`change-${environment.id}`} name="variables" rows={3} class="mono" required />
                <button type="submit" disabled={action.busy}>Save a new version</button>
              </form>
            </td>
          </tr>
        )
        : null}
    </>
  )
}
