/**
 * Webhooks (owners and admins): the endpoints, "New webhook" (the signing secret shown once, with
 * a copy button), enable or disable, rotate the secret, and an endpoint's recent deliveries.
 */
import { useState } from "preact/hooks"
import { webhookEventTypes } from "../../../src/webhooks/Events.js"
import { call, del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { Webhook, WebhookDelivery, WebhookSecret } from "../types.js"
import { ErrorLine, Listed, when } from "../ui.js"

const Secret = ({ shown }: { shown: WebhookSecret }) => {
  const [copied, setCopied] = useState(false)
  return (
    <div class="card secret" role="status">
      <p>
        The signing secret of <strong>{shown.webhook.name}</strong>: copy it now, it is not shown again.
      </p>
      <code class="mono">{shown.secret}</code>
      <button
        type="button"
        class="secondary"
        onClick={() => void navigator.clipboard.writeText(shown.secret).then(() => setCopied(true))}
      >
        {copied ? "Copied" : "Copy"}
      </button>
    </div>
  )
}

const Deliveries = ({ webhook }: { webhook: Webhook }) => {
  const deliveries = useLoad(
    () => get<{ items: ReadonlyArray<WebhookDelivery> }>(`/v1/webhooks/${webhook.id}/deliveries?limit=20`),
    [webhook.id],
    3_000
  )
  const items = deliveries.data?.items ?? []
  return (
    <>
      <ErrorLine error={deliveries.error} />
      {items.length === 0 ?
        <p class="muted">No deliveries yet: they start with the next event it follows.</p> :
        (
          <ul class="plain" aria-label={`Deliveries of ${webhook.name}`}>
            {items.map((delivery) => (
              <li key={delivery.id}>
                {delivery.event_type} <strong>{delivery.status}</strong>{" "}
                <span class="muted">{delivery.attempt_count} attempts, {when(delivery.created_at)}</span>
              </li>
            ))}
          </ul>
        )}
    </>
  )
}

export const WebhooksView = ({ organization, can }: { organization: string; can: Abilities }) => {
  const webhooks = useLoad(
    () => can.administer ? get<{ items: ReadonlyArray<Webhook> }>("/v1/webhooks") : Promise.resolve({ items: [] }),
    [organization, can.administer]
  )
  const [creating, setCreating] = useState(false)
  const [secret, setSecret] = useState<WebhookSecret | undefined>(undefined)
  const [open, setOpen] = useState<string | undefined>(undefined)
  const action = useAction()
  if (!can.administer) return <p class="empty">Webhooks are managed by the organization's owners and admins.</p>
  const submit = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    void action.run(async () => {
      setSecret(
        await post<WebhookSecret>("/v1/webhooks", {
          name: String(form.get("name") ?? ""),
          url: String(form.get("url") ?? ""),
          events: form.getAll("events").map(String)
        })
      )
      setCreating(false)
      await webhooks.reload()
    })
  }
  return (
    <section aria-labelledby="webhooks-title">
      <div class="title-row">
        <h1 id="webhooks-title">Webhooks</h1>
        <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>New webhook</button>
      </div>
      {creating
        ? (
          <form class="card form" onSubmit={submit} aria-label="New webhook">
            <label for="webhook-name">Name</label>
            <input id="webhook-name" name="name" required autocomplete="off" />
            <label for="webhook-url">URL</label>
            <input id="webhook-url" name="url" type="url" required placeholder="https://example.com/hooks/svc" />
            <fieldset>
              <legend>Events</legend>
              {webhookEventTypes.map((type) => (
                <label class="check">
                  <input type="checkbox" name="events" value={type} defaultChecked={type.startsWith("machine.")} />{" "}
                  {type}
                </label>
              ))}
            </fieldset>
            <button type="submit" disabled={action.busy}>Create webhook</button>
          </form>
        )
        : null}
      {secret === undefined ? null : <Secret shown={secret} />}
      <ErrorLine error={action.error} />
      <Listed
        loaded={webhooks}
        items={(data) => data.items}
        loading="Loading webhooks…"
        empty="No webhooks. Press “New webhook” to have svc call an HTTPS endpoint on machine events."
      >
        {(items) =>
          items.map((webhook) => (
            <article class="card" key={webhook.id} aria-label={webhook.name}>
              <h2>
                {webhook.name} <span class="muted">{webhook.enabled ? "enabled" : "disabled"}</span>
              </h2>
              <p class="mono">{webhook.url}</p>
              <p class="muted">{webhook.events.join(", ")}</p>
              <span class="actions">
                <button
                  type="button"
                  class="secondary"
                  onClick={() =>
                    void action.run(async () => {
                      await call("PATCH", `/v1/webhooks/${webhook.id}`, { enabled: !webhook.enabled })
                      await webhooks.reload()
                    })}
                >
                  {webhook.enabled ? "Disable" : "Enable"}
                </button>
                <button
                  type="button"
                  class="secondary"
                  onClick={() =>
                    void action.run(async () =>
                      setSecret(await post<WebhookSecret>(`/v1/webhooks/${webhook.id}/rotate-secret`))
                    )}
                >
                  Rotate secret
                </button>
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={open === webhook.id}
                  onClick={() => setOpen(open === webhook.id ? undefined : webhook.id)}
                >
                  Deliveries
                </button>
                <button
                  type="button"
                  class="danger"
                  onClick={() => {
                    if (!confirm(`Delete the webhook ${webhook.name}?`)) return
                    void action.run(async () => {
                      await del(`/v1/webhooks/${webhook.id}`)
                      await webhooks.reload()
                    })
                  }}
                >
                  Delete
                </button>
              </span>
              {open === webhook.id ? <Deliveries webhook={webhook} /> : null}
            </article>
          ))}
      </Listed>
    </section>
  )
}
