/**
 * Billing and usage. Metered: balances, the plan, usage over the last 14 days as a chart (a hand-made
 * SVG: no chart library for 14 bars), the invoice preview, auto-refill and checkout (owners and
 * billing members). Homelab (`unlimited`): the usage only, in running hours.
 */
import { useState } from "preact/hooks"
import { call, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { AutoRefill, Billing, InvoicePreview, Usage } from "../types.js"
import { ErrorLine, Listed, TableHead, when } from "../ui.js"

const money = (micros: number) => `$${(micros / 1e6).toFixed(2)}`
const hours = (seconds: number) => `${(seconds / 3600).toFixed(1)} h`

export const BillingView = ({ organization, can }: { organization: string; can: Abilities }) => {
  const billing = useLoad(() => get<Billing>("/v1/billing"), [organization])
  const b = billing.data
  if (b === undefined) {
    return billing.error === undefined ? <p aria-busy="true">Loading billing…</p> : <ErrorLine error={billing.error} />
  }
  const metered = b.status !== "unlimited"
  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">{metered ? "Billing" : "Usage"}</h1>
      {metered
        ? (
          <dl class="facts" aria-label="Balances">
            <dt>Status</dt>
            <dd>{b.status}</dd>
            <dt>Spendable</dt>
            <dd>{money(b.balances.spendable_micros)}</dd>
            <dt>Trial</dt>
            <dd>{money(b.balances.trial_micros)}</dd>
            <dt>Plan</dt>
            <dd>
              {b.plan.tier === null ? "none" : `${b.plan.tier}, ${money(b.balances.plan_micros)} left`}
              {b.plan.period_end === null ? "" : ` until ${when(b.plan.period_end)}`}
              {b.plan.cancel_at_period_end ? " (cancelled)" : ""}
            </dd>
            <dt>Credit</dt>
            <dd>{money(b.balances.credit_micros)}</dd>
          </dl>
        )
        : <p class="muted">This server does not bill: the running hours of the organization's machines.</p>}
      <UsageChart organization={organization} metered={metered} />
      {metered ? <Preview organization={organization} /> : null}
      {metered && can.manageBilling ? <Refill organization={organization} /> : null}
      {metered && can.manageBilling
        ? b.payments_available
          ? <Checkout />
          : <p class="empty">Payments are not set up on this server: ask its operator for credit.</p>
        : null}
    </section>
  )
}

const days = 14

/** One read of `/v1/usage` per day: the API answers a total between two instants. */
const UsageChart = ({ organization, metered }: { organization: string; metered: boolean }) => {
  const usage = useLoad(() => {
    const today = new Date()
    today.setUTCHours(0, 0, 0, 0)
    const starts = Array.from({ length: days }, (_, i) => new Date(today.getTime() - (days - 1 - i) * 86_400_000))
    return Promise.all(starts.map((since) =>
      get<Usage>(
        `/v1/usage?since=${since.toISOString()}&until=${new Date(since.getTime() + 86_400_000).toISOString()}`
      ).then((day) => ({ day: since.toISOString().slice(0, 10), value: metered ? day.amount_micros : day.seconds }))
    ))
  }, [organization, metered])
  const label = (value: number) => metered ? money(value) : hours(value)
  return (
    <>
      <h2 id="usage-title">Usage over the last {days} days</h2>
      <Listed loaded={usage} items={(data) => data} loading="Loading usage…" empty="No usage.">
        {(points) => {
          const top = Math.max(1, ...points.map((point) => point.value))
          const total = points.reduce((sum, point) => sum + point.value, 0)
          const width = 28
          return (
            <figure class="card chart">
              <svg
                viewBox={`0 0 ${points.length * width} 120`}
                role="img"
                aria-labelledby="usage-title usage-total"
                preserveAspectRatio="none"
              >
                {points.map((point, i) => {
                  const height = Math.round((point.value / top) * 100)
                  return (
                    <rect x={i * width + 4} y={110 - height} width={width - 8} height={Math.max(height, 1)} rx={2}>
                      <title>{point.day}: {label(point.value)}</title>
                    </rect>
                  )
                })}
              </svg>
              <figcaption id="usage-total">
                {label(total)} in all, from {points[0]!.day} to {points.at(-1)!.day}
              </figcaption>
            </figure>
          )
        }}
      </Listed>
    </>
  )
}

const Preview = ({ organization }: { organization: string }) => {
  const preview = useLoad(() => get<InvoicePreview>("/v1/billing/invoice-preview"), [organization])
  return (
    <>
      <h2>Invoice preview</h2>
      <Listed
        loaded={preview}
        items={(data) => data.lines}
        loading="Loading the invoice preview…"
        empty="Nothing used this period yet."
      >
        {(lines) => (
          <div class="table-wrap">
            <table aria-label="Invoice preview">
              <TableHead columns={["Line", "Hours", "Per hour", "Amount"]} />
              <tbody>
                {lines.map((line) => (
                  <tr key={line.description}>
                    <th scope="row">{line.description}</th>
                    <td>{hours(line.seconds)}</td>
                    <td>{money(line.hourly_micros)}</td>
                    <td>{money(line.amount_micros)}</td>
                    <td />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Listed>
      {preview.data === undefined ? null : (
        <p>
          Next charge {money(preview.data.next_charge_micros)} for {when(preview.data.period_start)} to{" "}
          {when(preview.data.period_end)}.
        </p>
      )}
    </>
  )
}

const Refill = ({ organization }: { organization: string }) => {
  const refill = useLoad(() => get<AutoRefill>("/v1/billing/auto-refill"), [organization])
  const action = useAction()
  const [said, setSaid] = useState<string | undefined>(undefined)
  const r = refill.data
  const save = (event: Event) => {
    event.preventDefault()
    const data = new FormData(event.currentTarget as HTMLFormElement)
    const dollars = (name: string) => Math.round(Number(data.get(name) ?? 0) * 1e6)
    void action.run(async () => {
      await call("PUT", "/v1/billing/auto-refill", {
        enabled: data.get("enabled") === "on",
        credit_packs: Number(data.get("packs") ?? 1),
        threshold_micros: dollars("threshold"),
        monthly_cap_micros: dollars("cap")
      })
      setSaid("Auto-refill saved.")
      await refill.reload()
    })
  }
  return (
    <form class="card form" onSubmit={save} aria-labelledby="refill-title" key={r === undefined ? "loading" : "loaded"}>
      <h2 id="refill-title">Auto-refill</h2>
      <ErrorLine error={refill.error} />
      {r === undefined ? null : (
        <>
          <label class="check">
            <input type="checkbox" name="enabled" defaultChecked={r.enabled} /> Buy credit when it runs low
          </label>
          <label for="refill-packs">Packs of $20 each time</label>
          <input id="refill-packs" name="packs" type="number" min="1" max="50" defaultValue={String(r.credit_packs)} />
          <label for="refill-threshold">When credit falls below ($)</label>
          <input
            id="refill-threshold"
            name="threshold"
            type="number"
            min="0"
            step="0.01"
            defaultValue={String(r.threshold_micros / 1e6)}
          />
          <label for="refill-cap">At most a month ($)</label>
          <input
            id="refill-cap"
            name="cap"
            type="number"
            min="0"
            step="0.01"
            defaultValue={String(r.monthly_cap_micros / 1e6)}
          />
          <p class="muted">
            {money(r.charged_this_month_micros)} charged this month
            {r.disabled_reason === null ? "" : `; turned off: ${r.disabled_reason}`}.
          </p>
          <button type="submit" disabled={action.busy}>Save auto-refill</button>
        </>
      )}
      {said === undefined ? null : <p role="status" class="ok">{said}</p>}
      <ErrorLine error={action.error} />
    </form>
  )
}

/** Checkout happens at the payment provider's page: the console only asks svc for its address. */
const Checkout = () => {
  const action = useAction()
  const buy = (body: Record<string, unknown>) =>
    action.run(async () => {
      const session = await post<{ checkout_url: string }>("/v1/billing/checkout", body)
      location.assign(session.checkout_url)
    })
  return (
    <div class="card form">
      <h2>Buy</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          void buy({ credit_packs: Number(new FormData(event.currentTarget as HTMLFormElement).get("packs") ?? 1) })
        }}
        aria-label="Buy credit"
      >
        <label for="buy-packs">Credit packs ($20 each)</label>
        <input id="buy-packs" name="packs" type="number" min="1" max="50" defaultValue="1" required />
        <button type="submit" disabled={action.busy}>Buy credit</button>
      </form>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          void buy({ plan: String(new FormData(event.currentTarget as HTMLFormElement).get("plan") ?? "starter") })
        }}
        aria-label="Subscribe to a plan"
      >
        <label for="buy-plan">Plan</label>
        <select id="buy-plan" name="plan">
          <option value="starter">starter</option>
          <option value="pro">pro</option>
          <option value="team">team</option>
          <option value="scale">scale</option>
        </select>
        <button type="submit" disabled={action.busy}>Subscribe</button>
      </form>
      <ErrorLine error={action.error} />
    </div>
  )
}
