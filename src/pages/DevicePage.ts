/**
 * `/device`: enter or confirm a device's code, then approve it (organization, preset, name and
 * lifetime) or deny it.
 */
import { html, layout, scriptValue } from "./Kit.js"

export interface DeviceRequestView {
  readonly userCode: string
  readonly clientName: string
  readonly requestedScope: string
  readonly defaultKeyName: string
}

export interface DeviceView {
  readonly apiBase: string
  readonly email: string
  /** The code as typed, when one was. */
  readonly typed: string | undefined
  /** The pending request it names; undefined when there is none (unknown, expired, decided). */
  readonly request: DeviceRequestView | undefined
  /** Why it could not be looked up, in words. */
  readonly problem: string | undefined
  readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string; readonly role: string }>
}

const presets: ReadonlyArray<readonly [string, string]> = [
  ["read_only", "Read only: look, change nothing"],
  ["use_existing", "Use existing machines"],
  ["create_and_use", "Create and use machines"],
  ["full_access", "Full access, keys and settings included"]
]

const script = (view: DeviceView) => `
const userCode = ${scriptValue(view.request?.userCode ?? "").text};
const form = document.getElementById("approve-form"), status = document.getElementById("device-status");
const decided = (text, kind) => { svc.say(status, text, kind); form.querySelectorAll("button, input, select").forEach(e => e.disabled = true); status.focus() };
form && form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const organization = form.elements.organization.value;
  const reply = await svc.api("POST", "/v1/auth/device/approve", {
    user_code: userCode, preset: form.elements.preset.value, name: form.elements.name.value.trim() || null,
    expires_in_days: Number(form.elements.lifetime.value) }, organization);
  if (!reply.ok) return svc.say(status, reply.status === 404 ? "This code is no longer waiting: it expired or was decided." : svc.problem(reply), "error");
  decided("Approved. Return to your device: it will receive its key in a few seconds.", "ok");
});
document.getElementById("deny") && document.getElementById("deny").addEventListener("click", async () => {
  const reply = await svc.api("POST", "/v1/auth/device/deny", { user_code: userCode }, form.elements.organization.value);
  if (!reply.ok && reply.status !== 204) return svc.say(status, reply.status === 404 ? "This code is no longer waiting." : svc.problem(reply), "error");
  decided("Denied. The device was refused.", "ok");
});
`

const entryForm = (typed: string | undefined) =>
  html`<form class="card" method="get" action="">
  <label for="user_code">Code shown on your device</label>
  <input id="user_code" name="user_code" value="${typed ?? ""}" autocomplete="off" autocapitalize="characters"
    spellcheck="false" placeholder="XXXX-XXXX" required>
  <button type="submit">Continue</button>
</form>`

const approveForm = (view: DeviceView, request: DeviceRequestView) =>
  view.organizations.length === 0
    ? html`<p class="card">You belong to no organization, so there is nothing to give this device access to.</p>`
    : html`<section class="card" aria-labelledby="request-title">
  <h2 id="request-title"><span id="client-name">${request.clientName}</span> asks for access</h2>
  <p>Check that your device shows <span class="code" id="confirm-code">${request.userCode}</span></p>
  <form id="approve-form" novalidate>
    <label for="organization">Organization</label>
    <select id="organization" name="organization">${
      view.organizations.map((organization) =>
        html`<option value="${organization.id}">${organization.name} (${organization.role})</option>`
      )
    }</select>
    <label for="preset">Access</label>
    <select id="preset" name="preset">${
      presets.map(([value, label]) =>
        html`<option value="${value}"${value === request.requestedScope ? html` selected` : null}>${label}</option>`
      )
    }</select>
    <label for="name">Key name</label>
    <input id="name" name="name" maxlength="64" value="${request.defaultKeyName}">
    <label for="lifetime">Valid for (days, 1-90)</label>
    <input id="lifetime" name="lifetime" type="number" min="1" max="90" value="90" inputmode="numeric">
    <button type="submit">Approve</button><button type="button" class="secondary" id="deny">Deny</button>
  </form>
  <p id="device-status" class="status" role="status" aria-live="polite" tabindex="-1"></p>
</section>`

export const devicePage = (view: DeviceView) =>
  layout({
    title: "Connect a device",
    apiBase: view.apiBase,
    signedInAs: view.email,
    script: script(view),
    body: html`<h1>Connect a device</h1>
${view.problem === undefined ? null : html`<p class="card error" role="alert">${view.problem}</p>`}
${view.request === undefined ? entryForm(view.typed) : approveForm(view, view.request)}`
  })
