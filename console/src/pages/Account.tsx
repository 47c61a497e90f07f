/** `/account`: who is signed in, the ways to sign in (linking another), the organizations, signing out. */
import { useState } from "preact/hooks"
import type { AccountPageData } from "../../../src/pages/PageData.js"
import { apiBase, post, uiUrl } from "../api.js"
import { Frame, refusal, type Said, Status, statusOf } from "./Frame.js"

export const AccountPage = ({ data }: { readonly data: AccountPageData }) => {
  const [said, say] = useState<Said | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const signOut = async () => {
    setBusy(true)
    try {
      await post("/v1/auth/logout")
    } catch (failure) {
      if (statusOf(failure) !== 401) {
        setBusy(false)
        return say(refusal(failure))
      }
    }
    location.assign(`${uiUrl}/sign-in`)
  }
  return (
    <Frame signedInAs={data.email}>
      <h1>Your account</h1>
      <section class="card" aria-labelledby="who-title">
        <h2 id="who-title">Signed in</h2>
        <p>
          You are signed in as <strong id="who">{data.email}</strong>.
        </p>
        <button type="button" id="sign-out" class="secondary" disabled={busy} onClick={signOut}>Sign out</button>
        <Status id="home-status" said={said} />
      </section>
      <section class="card" aria-labelledby="methods-title">
        <h2 id="methods-title">Ways to sign in</h2>
        <ul class="plain" id="identities">
          <li>
            {data.email} <span class="muted">your address</span>
          </li>
          {data.identities.map((identity) => <li>{identity}</li>)}
        </ul>
        {data.providers.map((provider) => (
          <a
            class="button secondary"
            href={`${apiBase}/v1/auth/login?provider=${encodeURIComponent(provider.name)}&return_to=%2Faccount`}
          >
            Link {provider.display_name}
          </a>
        ))}
        {data.emailAvailable ? <LinkAddress /> : null}
      </section>
      <section class="card" aria-labelledby="orgs-title">
        <h2 id="orgs-title">Your organizations</h2>
        {data.organizations.length === 0
          ? <p class="muted">You belong to no organization yet. Accept an invitation to join one.</p>
          : (
            <ul class="plain" id="account-organizations">
              {data.organizations.map((organization) => (
                <li>
                  <strong>{organization.name}</strong> <span class="muted">{organization.role}</span>
                </li>
              ))}
            </ul>
          )}
      </section>
    </Frame>
  )
}

/** Another address: a code is mailed to it, and typing it back links the address to this account. */
const LinkAddress = () => {
  const [linking, setLinking] = useState<string | undefined>(undefined)
  const [said, say] = useState<Said | undefined>(undefined)
  const start = async (event: Event) => {
    event.preventDefault()
    const address = (new FormData(event.currentTarget as HTMLFormElement).get("address") as string).trim()
    try {
      await post("/v1/auth/link/email", { email: address, return_to: "/account" })
      setLinking(address)
      say({ text: `We sent a code to ${address}.`, kind: "ok" })
      setTimeout(() => document.getElementById("linkcode")?.focus())
    } catch (failure) {
      say(refusal(failure))
    }
  }
  const verify = async (event: Event) => {
    event.preventDefault()
    const code = (new FormData(event.currentTarget as HTMLFormElement).get("linkcode") as string).trim()
    try {
      await post("/v1/auth/email/verify", { email: linking, code })
      location.reload()
    } catch (failure) {
      const status = statusOf(failure)
      say(
        status === 409
          ? { text: "That address belongs to another account.", kind: "error" }
          : status === 400
          ? { text: "That code is wrong, expired or already used.", kind: "error" }
          : refusal(failure)
      )
    }
  }
  return (
    <>
      {linking === undefined
        ? (
          <form id="link-start" noValidate onSubmit={start}>
            <label for="address">Add another email address</label>
            <input id="address" name="address" type="email" autocomplete="email" required />
            <button type="submit" class="secondary">Send a code</button>
          </form>
        )
        : (
          <form id="link-verify" noValidate onSubmit={verify}>
            <label for="linkcode">Code from that address</label>
            <input
              id="linkcode"
              name="linkcode"
              inputMode="numeric"
              autocomplete="one-time-code"
              maxLength={6}
              required
            />
            <button type="submit">Add the address</button>
          </form>
        )}
      <Status id="link-status" said={said} />
    </>
  )
}
