/** API keys: the list, "New key" (its secret shown once, with a copy button), revoke. */
import { useState } from "preact/hooks"
import { del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { ApiKey, NewApiKey } from "../types.js"
import { ErrorLine, Listed, TableHead, when } from "../ui.js"

export const KeysView = ({ organization }: { organization: string; can: Abilities }) => {
  const keys = useLoad(() => get<{ items: ReadonlyArray<ApiKey> }>("/v1/api-keys"), [organization])
  const [creating, setCreating] = useState(false)
  const [created, setCreated] = useState<NewApiKey | undefined>(undefined)
  const [copied, setCopied] = useState(false)
  const action = useAction()
  const submit = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    void action.run(async () => {
      const made = await post<NewApiKey>("/v1/api-keys", {
        name: String(form.get("name") ?? ""),
        preset: String(form.get("preset") ?? "full_access"),
        expires_in_days: Number(form.get("days") ?? 90)
      })
      setCreated(made)
      setCopied(false)
      setCreating(false)
      await keys.reload()
    })
  }
  return (
    <section aria-labelledby="keys-title">
      <div class="title-row">
        <h1 id="keys-title">API keys</h1>
        <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>New key</button>
      </div>
      {creating
        ? (
          <form class="card form" onSubmit={submit} aria-label="New key">
            <label for="key-name">Name</label>
            <input id="key-name" name="name" required maxLength={64} autocomplete="off" />
            <label for="key-preset">Access</label>
            <select id="key-preset" name="preset">
              <option value="full_access">Full access</option>
              <option value="create_and_use">Create and use machines</option>
              <option value="use_existing">Use existing machines</option>
              <option value="read_only">Read only</option>
            </select>
            <label for="key-days">Expires in (days)</label>
            <input id="key-days" name="days" type="number" min="1" max="365" defaultValue="90" />
            <button type="submit" disabled={action.busy}>Create key</button>
          </form>
        )
        : null}
      {created === undefined ? null : (
        <div class="card secret" role="status">
          <p>
            The secret of <strong>{created.api_key.name}</strong>: copy it now, it is not shown again.
          </p>
          <code id="new-secret" class="mono">{created.secret}</code>
          <button
            type="button"
            class="secondary"
            onClick={() => void navigator.clipboard.writeText(created.secret).then(() => setCopied(true))}
          >
            {copied ? "Copied" : "Copy"}
          </button>
        </div>
      )}
      <ErrorLine error={action.error} />
      <Listed
        loaded={keys}
        items={(data) => data.items.filter((key) => key.revoked_at === null)}
        loading="Loading keys…"
        empty="No API keys. Press “New key” to make one for the CLI or a program."
      >
        {(live) => (
          <div class="table-wrap">
            <table>
              <TableHead columns={["Name", "Key", "Access", "Expires", "Last used"]} />
              <tbody>
                {live.map((key) => (
                  <tr key={key.id} aria-label={key.name}>
                    <th scope="row">{key.name}</th>
                    <td class="mono">{key.prefix}…{key.last_four}</td>
                    <td>{key.preset}</td>
                    <td>{when(key.expires_at)}</td>
                    <td>{when(key.last_used_at)}</td>
                    <td>
                      <button
                        type="button"
                        class="danger"
                        onClick={() => {
                          if (!confirm(`Revoke the key ${key.name}? Programs using it stop working.`)) return
                          void action.run(async () => {
                            await del(`/v1/api-keys/${key.id}`)
                            await keys.reload()
                          })
                        }}
                      >
                        Revoke
                      </button>
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
