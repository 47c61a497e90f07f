/**
 * The organization's settings: the signed-in member's e-mail alerts, and for the owner the
 * ownership transfer and the organization's deletion (which needs a sign-in within 15 minutes:
 * the answer `recent_auth_required` offers a fresh sign-in that comes back here).
 */
import { useState } from "preact/hooks"
import { call, del, get, post, Problem, signInAgain } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { AlertPreferences, Me, Member } from "../types.js"
import { ErrorLine, Listed } from "../ui.js"

export const SettingsView = (
  { organization, name, me, can }: { organization: string; name: string; me: Me; can: Abilities }
) => (
  <section aria-labelledby="settings-title">
    <h1 id="settings-title">Settings of {name}</h1>
    <Alerts organization={organization} />
    {can.own ? <Transfer organization={organization} me={me} /> : null}
    {can.own ? <DeleteOrganization organization={organization} name={name} /> : null}
  </section>
)

const Alerts = ({ organization }: { organization: string }) => {
  const preferences = useLoad(() => get<AlertPreferences>("/v1/notifications/preferences"), [organization])
  const action = useAction()
  const [said, setSaid] = useState<string | undefined>(undefined)
  const save = (event: Event) => {
    event.preventDefault()
    const data = new FormData(event.currentTarget as HTMLFormElement)
    const alerts = Object.fromEntries(
      (preferences.data?.alerts ?? []).filter((alert) => alert.available).map((
        alert
      ) => [alert.type, data.get(alert.type) === "on"])
    )
    void action.run(async () => {
      await call("PUT", "/v1/notifications/preferences", { alerts })
      setSaid("Alert preferences saved.")
      await preferences.reload()
    })
  }
  return (
    <form class="card form" onSubmit={save} aria-labelledby="alerts-title">
      <h2 id="alerts-title">E-mail alerts</h2>
      <Listed
        loaded={preferences}
        items={(data) => data.alerts}
        loading="Loading your alerts…"
        empty="This server sends no alerts."
      >
        {(alerts) => (
          <>
            <p class="muted">Sent to {preferences.data!.email}.</p>
            {alerts.map((alert) => (
              <label class="check" key={alert.type}>
                <input type="checkbox" name={alert.type} defaultChecked={alert.enabled} disabled={!alert.available} />
                {alert.description}
                {alert.available ? "" : " (not sent by this server)"}
              </label>
            ))}
            <button type="submit" disabled={action.busy}>Save alerts</button>
          </>
        )}
      </Listed>
      {said === undefined ? null : <p role="status" class="ok">{said}</p>}
      <ErrorLine error={action.error} />
    </form>
  )
}

const Transfer = ({ organization, me }: { organization: string; me: Me }) => {
  const members = useLoad(
    () => get<{ items: ReadonlyArray<Member> }>(`/v1/organizations/${organization}/members`),
    [organization]
  )
  const action = useAction()
  const others = (members.data?.items ?? []).filter((member) => member.user_id !== me.user.id)
  const submit = (event: Event) => {
    event.preventDefault()
    const userId = String(new FormData(event.currentTarget as HTMLFormElement).get("user") ?? "")
    const to = others.find((member) => member.user_id === userId)
    if (to === undefined || !confirm(`Make ${to.email} the owner? You become an admin.`)) return
    void action.run(async () => {
      await post(`/v1/organizations/${organization}/transfer`, { user_id: userId })
      location.reload()
    })
  }
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="transfer-title">
      <h2 id="transfer-title">Transfer ownership</h2>
      {others.length === 0
        ? <p class="empty">Invite a member first: ownership goes to a member.</p>
        : (
          <>
            <label for="transfer-to">New owner</label>
            <select id="transfer-to" name="user">
              {others.map((member) => <option value={member.user_id}>{member.email} ({member.role})</option>)}
            </select>
            <button type="submit" disabled={action.busy}>Transfer ownership</button>
          </>
        )}
      <ErrorLine error={action.error ?? members.error} />
    </form>
  )
}

const DeleteOrganization = ({ organization, name }: { organization: string; name: string }) => {
  const action = useAction()
  const [stale, setStale] = useState(false)
  const submit = (event: Event) => {
    event.preventDefault()
    const typed = String(new FormData(event.currentTarget as HTMLFormElement).get("confirm") ?? "")
    if (typed.trim() !== name) return action.setError(`Type “${name}” to delete it.`)
    void action.run(async () => {
      try {
        await del(`/v1/organizations/${organization}`)
      } catch (failure) {
        if (failure instanceof Problem && failure.code === "recent_auth_required") setStale(true)
        throw failure
      }
      location.assign("#/")
      location.reload()
    })
  }
  return (
    <form class="card form danger-zone" onSubmit={submit} aria-labelledby="delete-title">
      <h2 id="delete-title">Delete the organization</h2>
      <p>
        Its machines stop at once, members are removed, API keys and invitations revoked. It needs a sign-in within the
        last 15 minutes.
      </p>
      <label for="delete-confirm">Type the organization's name to confirm</label>
      <input id="delete-confirm" name="confirm" required autocomplete="off" />
      <button type="submit" class="danger" disabled={action.busy}>Delete organization</button>
      <ErrorLine error={action.error} />
      {stale
        ? <button type="button" class="secondary" onClick={signInAgain}>Sign in again</button>
        : null}
    </form>
  )
}
