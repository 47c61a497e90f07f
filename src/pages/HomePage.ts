/** `/`: who is signed in, their organizations and roles, and signing out. */
import { html, layout, scriptValue } from "./Kit.js"

export interface HomeView {
  readonly apiBase: string
  readonly uiUrl: string
  readonly email: string
  readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string; readonly role: string }>
  /** The further ways to sign in as this user: linked addresses and providers, in words. */
  readonly identities: ReadonlyArray<string>
  /** Providers that can be linked: `{name, display_name}`. */
  readonly providers: ReadonlyArray<{ readonly name: string; readonly display_name: string }>
  readonly emailAvailable: boolean
}

const script = (view: HomeView) => `
const uiUrl = ${scriptValue(view.uiUrl).text};
document.getElementById("sign-out").addEventListener("click", async (event) => {
  const button = event.currentTarget; button.disabled = true;
  const reply = await svc.api("POST", "/v1/auth/logout");
  if (reply.ok || reply.status === 401) return location.assign(uiUrl + "/sign-in");
  button.disabled = false; svc.say(document.getElementById("home-status"), svc.problem(reply), "error");
});
const linkForm = document.getElementById("link-start"), codeForm = document.getElementById("link-verify");
const linkStatus = document.getElementById("link-status");
let linking = "";
linkForm && linkForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  linking = linkForm.elements.address.value.trim();
  const reply = await svc.api("POST", "/v1/auth/link/email", { email: linking, return_to: "/" });
  if (!reply.ok) return svc.say(linkStatus, svc.problem(reply), "error");
  linkForm.classList.add("hidden"); codeForm.classList.remove("hidden");
  svc.say(linkStatus, "We sent a code to " + linking + ".", "ok"); codeForm.elements.linkcode.focus();
});
codeForm && codeForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const reply = await svc.api("POST", "/v1/auth/email/verify", { email: linking, code: codeForm.elements.linkcode.value.trim() });
  if (reply.ok) return location.reload();
  svc.say(linkStatus, reply.status === 409 ? "That address belongs to another account." :
    reply.status === 400 ? "That code is wrong, expired or already used." : svc.problem(reply), "error");
});
`

export const homePage = (view: HomeView) =>
  layout({
    title: "Your account",
    apiBase: view.apiBase,
    signedInAs: view.email,
    script: script(view),
    body: html`<h1>Your account</h1>
<section class="card" aria-labelledby="who-title">
  <h2 id="who-title">Signed in</h2>
  <p>You are signed in as <strong id="who">${view.email}</strong>.</p>
  <button type="button" id="sign-out" class="secondary">Sign out</button>
  <p id="home-status" class="status" role="status" aria-live="polite"></p>
</section>
<section class="card" aria-labelledby="methods-title">
  <h2 id="methods-title">Ways to sign in</h2>
  <ul class="plain" id="identities"><li>${view.email} <span class="muted">your address</span></li>${
      view.identities.map((identity) => html`<li>${identity}</li>`)
    }</ul>
  ${
      view.providers.map((provider) =>
        html`<a class="button secondary" href="${view.apiBase}/v1/auth/login?provider=${
          encodeURIComponent(provider.name)
        }&amp;return_to=%2F">Link ${provider.display_name}</a>`
      )
    }
  ${
      !view.emailAvailable ? null : html`<form id="link-start" novalidate>
    <label for="address">Add another email address</label>
    <input id="address" name="address" type="email" autocomplete="email" required>
    <button type="submit" class="secondary">Send a code</button>
  </form>
  <form id="link-verify" class="hidden" novalidate>
    <label for="linkcode">Code from that address</label>
    <input id="linkcode" name="linkcode" inputmode="numeric" autocomplete="one-time-code" maxlength="6" required>
    <button type="submit">Add the address</button>
  </form>`
    }
  <p id="link-status" class="status" role="status" aria-live="polite"></p>
</section>
<section class="card" aria-labelledby="orgs-title">
  <h2 id="orgs-title">Your organizations</h2>
  ${
      view.organizations.length === 0
        ? html`<p class="muted">You belong to no organization yet. Accept an invitation to join one.</p>`
        : html`<ul class="plain" id="organizations">${
          view.organizations.map((organization) =>
            html`<li><strong>${organization.name}</strong> <span class="muted">${organization.role}</span></li>`
          )
        }</ul>`
    }
</section>`
  })
