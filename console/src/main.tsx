/**
 * The console: who is signed in, the organization switcher, and the views of the organization
 * (machines, a machine, its terminal, API keys, members). The hash holds the place (route.ts); a
 * bare `{ui_url}/` shows the active organization's machines. The pages outside an organization
 * (pages/: sign-in, device, invitation, account) are served at their own paths.
 */
import { render } from "preact"
import { lazy, Suspense } from "preact/compat"
import { call, get, post, uiUrl, useOrganization } from "./api.js"
import { useLoad } from "./hooks.js"
import { abilitiesOf } from "./roles.js"
import { href, useRoute } from "./route.js"
import "./style.css"
import { applyStoredTheme, ThemeSwitch } from "./theme.js"
import type { Me } from "./types.js"
import { ErrorLine } from "./ui.js"
import { MachinesView } from "./views/Machines.js"

/**
 * The machines' list is the first page and in the entry; every other view is a chunk of its own,
 * fetched when first shown (as the terminal is), so the first page loads only what it shows.
 */
const ModelsView = lazy(() => import("./views/Agents.js").then((module) => module.ModelsView))
const BillingView = lazy(() => import("./views/Billing.js").then((module) => module.BillingView))
const EnvironmentsView = lazy(() => import("./views/Environments.js").then((module) => module.EnvironmentsView))
const KeysView = lazy(() => import("./views/Keys.js").then((module) => module.KeysView))
const MachineView = lazy(() => import("./views/Machine.js").then((module) => module.MachineView))
const MembersView = lazy(() => import("./views/Members.js").then((module) => module.MembersView))
const SettingsView = lazy(() => import("./views/Settings.js").then((module) => module.SettingsView))
const TemplatesView = lazy(() => import("./views/Snapshots.js").then((module) => module.TemplatesView))
const WebhooksView = lazy(() => import("./views/Webhooks.js").then((module) => module.WebhooksView))

/** The header's sections, in order: the hash's first part and the link's words. */
const sections: ReadonlyArray<readonly [string, string]> = [
  ["machines", "Machines"],
  ["templates", "Templates"],
  ["models", "Agents"],
  ["keys", "Keys"],
  ["members", "Members"],
  ["environments", "Environments"],
  ["webhooks", "Webhooks"],
  ["billing", "Billing"],
  ["settings", "Settings"]
]

const App = () => {
  const route = useRoute()
  const me = useLoad(() => get<Me>("/v1/me"), [])
  const organizations = me.data?.organizations ?? []
  const active = organizations.find((organization) => organization.id === me.data?.active_organization_id)
  const chosen = route.organization ?? active?.id ?? organizations[0]?.id
  const membership = organizations.find((organization) => organization.id === chosen)
  if (me.data === undefined) {
    return me.error === undefined ? <p class="loading" aria-busy="true">Loading…</p> : <ErrorLine error={me.error} />
  }
  if (membership !== undefined) useOrganization(membership.id)
  const section = route.path[0] ?? "machines"
  const signOut = async () => {
    await post("/v1/auth/logout").catch(() => undefined)
    location.assign(`${uiUrl}/sign-in`)
  }
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={membership === undefined ? "#/" : href(membership.id, "machines")}>svc</a>
        {organizations.length === 0 ? null : (
          <label class="switcher">
            <span class="visually-hidden">Organization</span>
            <select
              id="organizations"
              aria-label="Organization"
              value={membership?.id}
              onChange={(event) => {
                const id = (event.currentTarget as HTMLSelectElement).value
                void call("PUT", "/v1/me/active-organization", { organization_id: id }).catch(() => undefined)
                location.hash = href(id, "machines")
              }}
            >
              {organizations.map((organization) => (
                <option value={organization.id}>{organization.name} ({organization.role})</option>
              ))}
            </select>
          </label>
        )}
        <nav aria-label="Sections">
          {membership === undefined ? null : (
            <>
              {sections.map(([name, label]) => (
                <a href={href(membership.id, name)} aria-current={section === name ? "page" : undefined}>{label}</a>
              ))}
            </>
          )}
          <a href={`${uiUrl}/account`}>Account</a>
        </nav>
        <span class="who" id="who">{me.data.user.email}</span>
        <ThemeSwitch />
        <button type="button" class="secondary" onClick={signOut}>Sign out</button>
      </header>
      <main id="main" tabIndex={-1}>
        {membership === undefined
          ? (
            <section class="card">
              <h1>No organization yet</h1>
              <p>You belong to no organization. Accept an invitation from its owner to join one.</p>
            </section>
          )
          : (
            <Suspense fallback={<p aria-busy="true" class="muted">Loading…</p>}>
              <View membership={membership} me={me.data} path={route.path} />
            </Suspense>
          )}
      </main>
    </>
  )
}

const View = (
  { membership, me, path }: {
    membership: Me["organizations"][number]
    me: Me
    path: ReadonlyArray<string>
  }
) => {
  const { id: organization, name } = membership
  const can = abilitiesOf(membership.role)
  const [section, id, sub, rest] = path
  if (section === "keys") return <KeysView organization={organization} can={can} />
  if (section === "members") return <MembersView organization={organization} can={can} />
  if (section === "templates") return <TemplatesView organization={organization} can={can} />
  if (section === "environments") return <EnvironmentsView organization={organization} can={can} />
  if (section === "settings") return <SettingsView organization={organization} name={name} me={me} can={can} />
  if (section === "billing") return <BillingView organization={organization} can={can} />
  if (section === "models") return <ModelsView organization={organization} />
  if (section === "webhooks") return <WebhooksView organization={organization} can={can} />
  if (section === "machines" && id !== undefined) {
    return <MachineView key={id} organization={organization} id={id} tab={sub ?? "overview"} rest={rest} can={can} />
  }
  return <MachinesView organization={organization} can={can} />
}

/**
 * A page outside an organization (sign-in, device, invitation, account) comes with what svc knows
 * of it in the document; its chunk is loaded instead of the organization's views.
 */
applyStoredTheme()
const app = document.getElementById("app")!
const page = document.querySelector<HTMLMetaElement>("meta[name=\"svc-page\"]")?.content
if (page === undefined || page === "") render(<App />, app)
else void import("./pages/Pages.js").then((module) => module.renderPage(JSON.parse(page), app))
