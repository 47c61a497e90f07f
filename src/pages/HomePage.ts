/** `/`: who is signed in, their organizations and roles, and signing out. */
import { html, layout, scriptValue } from "./Kit.js"

export interface HomeView {
  readonly apiBase: string
  readonly uiUrl: string
  readonly email: string
  readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string; readonly role: string }>
}

const script = (view: HomeView) => `
const uiUrl = ${scriptValue(view.uiUrl).text};
document.getElementById("sign-out").addEventListener("click", async (event) => {
  const button = event.currentTarget; button.disabled = true;
  const reply = await svc.api("POST", "/v1/auth/logout");
  if (reply.ok || reply.status === 401) return location.assign(uiUrl + "/sign-in");
  button.disabled = false; svc.say(document.getElementById("home-status"), svc.problem(reply), "error");
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
