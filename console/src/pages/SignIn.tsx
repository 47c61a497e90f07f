/** `/sign-in`: the server's providers, e-mail by code or magic link, and `?error=` in words. */
import { useEffect, useRef, useState } from "preact/hooks"
import type { SignInPageData } from "../../../src/pages/PageData.js"
import { apiBase, post, uiUrl } from "../api.js"
import { Frame, refusal, type Said, Status, statusOf } from "./Frame.js"

/** Every `?error=` code the sign-in routes send here, in words. */
const signInErrors: Record<string, string> = {
  access_denied: "Sign-in was refused. New accounts on this server need an invitation, or the provider said no.",
  identity_in_use: "That sign-in is already linked to another account.",
  oidc_failed: "The sign-in provider's answer could not be checked. Please try again.",
  oidc_unavailable: "The sign-in provider cannot be reached right now. Please try again later.",
  session_expired: "That sign-in link or attempt has expired or was already used. Please start again.",
  unsupported_provider: "That sign-in method is not offered on this server."
}

export const SignInPage = ({ data }: { readonly data: SignInPageData }) => {
  const oidc = data.providers.filter((provider) => provider.kind === "oidc")
  const email = data.providers.some((provider) => provider.kind === "email")
  const error = data.error === null
    ? undefined
    : Object.hasOwn(signInErrors, data.error)
    ? signInErrors[data.error]
    : "Sign-in failed. Please try again."
  const loginUrl = (name: string) =>
    `${apiBase}/v1/auth/login?provider=${encodeURIComponent(name)}&return_to=${encodeURIComponent(data.returnTo)}`
  return (
    <Frame signedInAs={data.signedInAs}>
      <h1>Sign in to svc</h1>
      {error === undefined ? null : <p class="card error" role="alert" id="sign-in-error">{error}</p>}
      {data.signedInAs === null ? null : (
        <p class="card">
          You are signed in as <strong>{data.signedInAs}</strong>.{" "}
          <a href={`${uiUrl}/`}>Continue</a>, or sign in again below to link another sign-in method.
        </p>
      )}
      {oidc.length === 0 ? null : (
        <section class="card stack" aria-labelledby="providers-title">
          <h2 id="providers-title">With your account at</h2>
          {oidc.map((provider) => <a class="button" href={loginUrl(provider.name)}>{provider.display_name}</a>)}
        </section>
      )}
      {email ? <EmailSignIn returnTo={data.returnTo} /> : null}
      {oidc.length === 0 && !email
        ? <p class="card">No sign-in method is configured on this server. Ask its operator.</p>
        : null}
      {data.access === "invite_only"
        ? (
          <p class="muted">
            New accounts on this server need an invitation.
            {data.waitlistUrl === null ? null : [" ", <a href={data.waitlistUrl}>Join the waitlist</a>, "."]}
          </p>
        )
        : null}
    </Frame>
  )
}

/** The address first, then the mailed code (or its link, opened in this browser). */
const EmailSignIn = ({ returnTo }: { readonly returnTo: string }) => {
  const [sentTo, setSentTo] = useState<string | undefined>(undefined)
  const [said, say] = useState<Said | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const field = useRef<HTMLInputElement>(null)
  // The field of the step just shown takes the focus (not on the page's first showing).
  const shown = useRef(false)
  useEffect(() => {
    if (shown.current) field.current?.focus()
    shown.current = true
  }, [sentTo])
  const start = async (event: Event) => {
    event.preventDefault()
    const address = (new FormData(event.currentTarget as HTMLFormElement).get("email") as string).trim()
    setBusy(true)
    try {
      await post("/v1/auth/email/start", { email: address, return_to: returnTo })
      setSentTo(address)
      say({ text: "Check your inbox: enter the code, or open the link in this browser.", kind: "ok" })
    } catch (failure) {
      say(refusal(failure))
    }
    setBusy(false)
  }
  const verify = async (event: Event) => {
    event.preventDefault()
    const code = (new FormData(event.currentTarget as HTMLFormElement).get("code") as string).replace(/\s/g, "")
    setBusy(true)
    try {
      const verified = await post<{ return_to: string }>("/v1/auth/email/verify", { email: sentTo, code })
      say({ text: "Signed in.", kind: "ok" })
      location.assign(uiUrl + verified.return_to)
    } catch (failure) {
      say(
        statusOf(failure) === 400
          ? { text: "That code is wrong, expired or already used.", kind: "error" }
          : refusal(failure)
      )
      setBusy(false)
    }
  }
  return (
    <section class="card" aria-labelledby="email-title">
      <h2 id="email-title">With your email address</h2>
      {sentTo === undefined
        ? (
          <form id="email-start" noValidate onSubmit={start}>
            <label for="email">Email address</label>
            <input ref={field} id="email" name="email" type="email" autocomplete="email" inputMode="email" required />
            <button type="submit" disabled={busy}>Email me a code</button>
          </form>
        )
        : (
          <form id="email-verify" noValidate onSubmit={verify}>
            <p>
              We sent a code and a link to <strong id="sent-to">{sentTo}</strong>.
            </p>
            <label for="code">6-digit code</label>
            <input
              ref={field}
              id="code"
              name="code"
              inputMode="numeric"
              autocomplete="one-time-code"
              pattern="[0-9]{6}"
              maxLength={6}
              required
            />
            <button type="submit" disabled={busy}>Sign in</button>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setSentTo(undefined)
                say(undefined)
              }}
            >
              Use another address
            </button>
          </form>
        )}
      <Status id="email-status" said={said} />
    </section>
  )
}
