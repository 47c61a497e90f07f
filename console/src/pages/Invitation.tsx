/**
 * `/invitations/accept?token=`: what the invitation is for, then one button that accepts it. The
 * page says in words why it cannot be accepted (used, revoked, expired, for another address) instead
 * of offering a button that would fail.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import type { InvitationPageData } from "../../../src/pages/PageData.js"
import { post, uiUrl } from "../api.js"
import { Frame, refusal, type Said, Status } from "./Frame.js"

const closedWords = {
  accepted: "This invitation was already used.",
  revoked: "This invitation was withdrawn. Ask for a new one.",
  expired: "This invitation has expired (links work for seven days). Ask for a new one."
} as const

const Home = () => <a class="button secondary" href={`${uiUrl}/`}>Your account</a>

export const InvitationPage = ({ data }: { readonly data: InvitationPageData }) => {
  const invitation = data.invitation
  if (invitation === null) {
    return (
      <Frame signedInAs={data.signedInAs}>
        <h1>Invitation</h1>
        <section class="card">
          <p role="alert" class="error">
            This invitation link is not valid. Check that you opened the whole link from the e-mail.
          </p>
          <Home />
        </section>
      </Frame>
    )
  }
  return (
    <Frame signedInAs={data.signedInAs}>
      <h1>Join {invitation.organizationName}</h1>
      <section class="card" aria-labelledby="invitation-title">
        <h2 id="invitation-title">Invitation</h2>
        <p>
          You are invited to join <strong id="organization">{invitation.organizationName}</strong> as{" "}
          <strong id="role">{invitation.role}</strong>.
        </p>
        <p class="muted">Sent to {invitation.email}; valid until {new Date(invitation.expiresAt).toUTCString()}.</p>
        {invitation.state !== "open"
          ? (
            <>
              <p role="alert" class="error">{closedWords[invitation.state]}</p>
              <Home />
            </>
          )
          : !invitation.forViewer
          ? (
            <>
              <p role="alert" class="error">
                This invitation is for {invitation.email}, but you are signed in as{" "}
                {data.signedInAs}. Sign out and sign in with {invitation.email}, or link that address to your account.
              </p>
              <Home />
            </>
          )
          : <Accept token={data.token} />}
      </section>
    </Frame>
  )
}

const Accept = ({ token }: { readonly token: string }) => {
  const [said, say] = useState<Said | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [joined, setJoined] = useState(false)
  const next = useRef<HTMLAnchorElement>(null)
  useEffect(() => void (joined && next.current?.focus()), [joined])
  const accept = async () => {
    setBusy(true)
    say({ text: "Joining…", kind: "" })
    try {
      const accepted = await post<{ role: string }>("/v1/invitations/accept", { token })
      say({ text: `You joined as ${accepted.role}.`, kind: "ok" })
      setJoined(true)
    } catch (failure) {
      say(refusal(failure))
      setBusy(false)
    }
  }
  return (
    <>
      {joined
        ? <a id="continue" ref={next} class="button" href={`${uiUrl}/`}>Continue to your account</a>
        : <button type="button" id="accept" disabled={busy} onClick={accept}>Accept invitation</button>}
      <Status id="invitation-status" said={said} />
    </>
  )
}
