/** `/sign-in`: the server's providers, email by code or magic link, and `?error=` in words. */
import type { SignInMethod } from "../identity/SignInMethods.js"
import { html, layout, scriptValue } from "./Kit.js"

/** Every `?error=` code the sign-in routes send here, in words. */
export const signInErrors: Record<string, string> = {
  access_denied: "Sign-in was refused. New accounts on this server need an invitation, or the provider said no.",
  identity_in_use: "That sign-in is already linked to another account.",
  oidc_failed: "The sign-in provider's answer could not be checked. Please try again.",
  oidc_unavailable: "The sign-in provider cannot be reached right now. Please try again later.",
  session_expired: "That sign-in link or attempt has expired or was already used. Please start again.",
  unsupported_provider: "That sign-in method is not offered on this server."
}

export interface SignInView {
  readonly apiBase: string
  readonly uiUrl: string
  readonly returnTo: string
  readonly error: string | undefined
  readonly access: "open" | "invite_only"
  readonly waitlistUrl: string | null
  readonly providers: ReadonlyArray<SignInMethod>
  readonly signedInAs: string | undefined
}

const script = (view: SignInView) => `
const returnTo = ${scriptValue(view.returnTo).text};
const uiUrl = ${scriptValue(view.uiUrl).text};
const startForm = document.getElementById("email-start"), verifyForm = document.getElementById("email-verify");
const status = document.getElementById("email-status");
let email = "";
startForm && startForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = startForm.querySelector("button"); button.disabled = true;
  email = startForm.elements.email.value.trim();
  const reply = await svc.api("POST", "/v1/auth/email/start", { email, return_to: returnTo });
  button.disabled = false;
  if (!reply.ok) return svc.say(status, svc.problem(reply), "error");
  startForm.classList.add("hidden"); verifyForm.classList.remove("hidden");
  document.getElementById("sent-to").textContent = email;
  svc.say(status, "Check your inbox: enter the code, or open the link in this browser.", "ok");
  verifyForm.elements.code.focus();
});
verifyForm && verifyForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = verifyForm.querySelector("button[type=submit]"); button.disabled = true;
  const code = verifyForm.elements.code.value.replace(/\\s/g, "");
  const reply = await svc.api("POST", "/v1/auth/email/verify", { email, code });
  button.disabled = false;
  if (!reply.ok) return svc.say(status, reply.status === 400 ? "That code is wrong, expired or already used." : svc.problem(reply), "error");
  svc.say(status, "Signed in.", "ok");
  location.assign(uiUrl + reply.data.return_to);
});
document.getElementById("other-address") && document.getElementById("other-address").addEventListener("click", () => {
  verifyForm.classList.add("hidden"); startForm.classList.remove("hidden"); svc.say(status, ""); startForm.elements.email.focus();
});
`

export const signInPage = (view: SignInView) => {
  const oidc = view.providers.filter((provider) => provider.kind === "oidc")
  const email = view.providers.some((provider) => provider.kind === "email")
  const loginUrl = (name: string) =>
    `${view.apiBase}/v1/auth/login?provider=${encodeURIComponent(name)}&return_to=${encodeURIComponent(view.returnTo)}`
  const error = view.error === undefined ? undefined : signInErrors[view.error] ?? "Sign-in failed. Please try again."
  return layout({
    title: "Sign in",
    apiBase: view.apiBase,
    signedInAs: view.signedInAs,
    script: script(view),
    body: html`<h1>Sign in to svc</h1>
${error === undefined ? null : html`<p class="card error" role="alert" id="sign-in-error">${error}</p>`}
${
      view.signedInAs === undefined ?
        null :
        html`<p class="card">You are signed in as <strong>${view.signedInAs}</strong>.
  <a href="${view.uiUrl}/">Continue</a>, or sign in again below to link another sign-in method.</p>`
    }
${
      oidc.length === 0 ? null : html`<section class="card stack" aria-labelledby="providers-title">
  <h2 id="providers-title">With your account at</h2>
  ${oidc.map((provider) => html`<a class="button" href="${loginUrl(provider.name)}">${provider.display_name}</a>`)}
</section>`
    }
${
      !email ? null : html`<section class="card" aria-labelledby="email-title">
  <h2 id="email-title">With your email address</h2>
  <form id="email-start" novalidate>
    <label for="email">Email address</label>
    <input id="email" name="email" type="email" autocomplete="email" inputmode="email" required>
    <button type="submit">Email me a code</button>
  </form>
  <form id="email-verify" class="hidden" novalidate>
    <p>We sent a code and a link to <strong id="sent-to"></strong>.</p>
    <label for="code">6-digit code</label>
    <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
    <button type="submit">Sign in</button><button type="button" class="secondary" id="other-address">Use another address</button>
  </form>
  <p id="email-status" class="status" role="status" aria-live="polite"></p>
</section>`
    }
${
      oidc.length === 0 && !email
        ? html`<p class="card">No sign-in method is configured on this server. Ask its operator.</p>`
        : null
    }
${
      view.access === "invite_only"
        ? html`<p class="muted">New accounts on this server need an invitation.${
          view.waitlistUrl === null ? null : html` <a href="${view.waitlistUrl}">Join the waitlist</a>.`
        }</p>`
        : null
    }`
  })
}
