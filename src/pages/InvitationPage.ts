/**
 * `/invitations/accept?token=`: what the invitation is for, then one button that accepts it. The
 * page says in words why it cannot be accepted (used, revoked, expired, for another address) instead
 * of offering a button that would fail.
 */
import { html, layout, scriptValue } from "./Kit.js"

export interface InvitationView {
  readonly apiBase: string
  readonly uiUrl: string
  readonly signedInAs: string
  readonly token: string
  /** None when no invitation has this token (or its organization was deleted). */
  readonly invitation:
    | {
      readonly organizationName: string
      readonly email: string
      readonly role: string
      readonly expiresAt: number
      readonly state: "open" | "accepted" | "revoked" | "expired"
      /** The invited address is one the viewer signs in with. */
      readonly forViewer: boolean
    }
    | undefined
}

const closedWords = {
  accepted: "This invitation was already used.",
  revoked: "This invitation was withdrawn. Ask for a new one.",
  expired: "This invitation has expired (links work for seven days). Ask for a new one."
} as const

const script = (view: InvitationView) => `
const uiUrl = ${scriptValue(view.uiUrl).text};
const token = ${scriptValue(view.token).text};
const button = document.getElementById("accept");
const status = document.getElementById("invitation-status");
button.addEventListener("click", async () => {
  button.disabled = true; svc.say(status, "Joining…");
  const reply = await svc.api("POST", "/v1/invitations/accept", { token });
  if (reply.ok) {
    svc.say(status, "You joined as " + reply.data.role + ".", "ok");
    button.classList.add("hidden");
    const next = document.getElementById("continue");
    next.classList.remove("hidden"); next.focus();
    return;
  }
  button.disabled = false; svc.say(status, svc.problem(reply), "error");
});
`

export const invitationPage = (view: InvitationView) => {
  const invitation = view.invitation
  const common = { title: "Invitation", apiBase: view.apiBase, signedInAs: view.signedInAs }
  if (invitation === undefined) {
    return layout({
      ...common,
      body: html`<h1>Invitation</h1><section class="card"><p role="alert" class="error">This invitation link is not
valid. Check that you opened the whole link from the e-mail.</p><a class="button secondary" href="${view.uiUrl}/">Your account</a></section>`
    })
  }
  const expires = new Date(invitation.expiresAt).toUTCString()
  const details = html`<h1>Join ${invitation.organizationName}</h1>
<section class="card" aria-labelledby="invitation-title">
  <h2 id="invitation-title">Invitation</h2>
  <p>You are invited to join <strong id="organization">${invitation.organizationName}</strong> as
  <strong id="role">${invitation.role}</strong>.</p>
  <p class="muted">Sent to ${invitation.email}; valid until ${expires}.</p>`
  if (invitation.state !== "open") {
    return layout({
      ...common,
      body: html`${details}<p role="alert" class="error">${closedWords[invitation.state]}</p>
<a class="button secondary" href="${view.uiUrl}/">Your account</a></section>`
    })
  }
  if (!invitation.forViewer) {
    return layout({
      ...common,
      body: html`${details}<p role="alert" class="error">This invitation is for ${invitation.email}, but you are signed
in as ${view.signedInAs}. Sign out and sign in with ${invitation.email}, or link that address to your account.</p>
<a class="button secondary" href="${view.uiUrl}/">Your account</a></section>`
    })
  }
  return layout({
    ...common,
    script: script(view),
    body: html`${details}
  <button type="button" id="accept">Accept invitation</button>
  <a id="continue" class="button hidden" href="${view.uiUrl}/">Continue to your account</a>
  <p id="invitation-status" class="status" role="status" aria-live="polite"></p>
</section>`
  })
}
