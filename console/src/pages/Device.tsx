/**
 * `/device`: enter or confirm a device's code, then approve it (organization, preset, name and
 * lifetime) or deny it.
 */
import { useRef, useState } from "preact/hooks"
import type { DevicePageData } from "../../../src/pages/PageData.js"
import { call } from "../api.js"
import { Frame, refusal, type Said, Status, statusOf } from "./Frame.js"

const presets: ReadonlyArray<readonly [string, string]> = [
  ["read_only", "Read only: look, change nothing"],
  ["use_existing", "Use existing machines"],
  ["create_and_use", "Create and use machines"],
  ["full_access", "Full access, keys and settings included"]
]

const problems = {
  rate_limited: "Too many codes tried. Wait a few minutes and try again.",
  unknown: "That code is unknown, expired or already used. Check the code on your device."
} as const

export const DevicePage = ({ data }: { readonly data: DevicePageData }) => (
  <Frame signedInAs={data.email}>
    <h1>Connect a device</h1>
    {data.problem === null ? null : <p class="card error" role="alert">{problems[data.problem]}</p>}
    {data.request === null
      ? (
        // A plain GET form: the page comes back with `?user_code=` and the request it names.
        <form class="card" method="get" action="">
          <label for="user_code">Code shown on your device</label>
          <input
            id="user_code"
            name="user_code"
            value={data.typed ?? ""}
            autocomplete="off"
            autocapitalize="characters"
            spellcheck={false}
            placeholder="XXXX-XXXX"
            required
          />
          <button type="submit">Continue</button>
        </form>
      )
      : <Approve data={data} request={data.request} />}
  </Frame>
)

const Approve = (
  { data, request }: { readonly data: DevicePageData; readonly request: NonNullable<DevicePageData["request"]> }
) => {
  const [said, say] = useState<Said | undefined>(undefined)
  const [decided, setDecided] = useState(false)
  const form = useRef<HTMLFormElement>(null)
  if (data.organizations.length === 0) {
    return <p class="card">You belong to no organization, so there is nothing to give this device access to.</p>
  }
  const field = (name: string) => (form.current!.elements.namedItem(name) as HTMLInputElement).value
  const decide = async (path: string, body: unknown, words: string) => {
    try {
      await call("POST", path, body, { "x-organization-id": field("organization") })
      setDecided(true)
      say({ text: words, kind: "ok" })
      setTimeout(() => document.getElementById("device-status")?.focus())
    } catch (failure) {
      say(
        statusOf(failure) === 404
          ? { text: "This code is no longer waiting: it expired or was decided.", kind: "error" }
          : refusal(failure)
      )
    }
  }
  const approve = (event: Event) => {
    event.preventDefault()
    void decide("/v1/auth/device/approve", {
      user_code: request.userCode,
      preset: field("preset"),
      name: field("name").trim() || null,
      expires_in_days: Number(field("lifetime"))
    }, "Approved. Return to your device: it will receive its key in a few seconds.")
  }
  return (
    <section class="card" aria-labelledby="request-title">
      <h2 id="request-title">
        <span id="client-name">{request.clientName}</span> asks for access
      </h2>
      <p>
        Check that your device shows <span class="code" id="confirm-code">{request.userCode}</span>
      </p>
      <form id="approve-form" noValidate onSubmit={approve} ref={form}>
        <fieldset disabled={decided}>
          <label for="organization">Organization</label>
          <select id="organization" name="organization">
            {data.organizations.map((organization) => (
              <option value={organization.id}>{organization.name} ({organization.role})</option>
            ))}
          </select>
          <label for="preset">Access</label>
          <select id="preset" name="preset">
            {presets.map(([value, label]) => (
              <option value={value} selected={value === request.requestedScope}>{label}</option>
            ))}
          </select>
          <label for="name">Key name</label>
          <input id="name" name="name" maxLength={64} defaultValue={request.defaultKeyName} />
          <label for="lifetime">Valid for (days, 1-90)</label>
          <input id="lifetime" name="lifetime" type="number" min={1} max={90} defaultValue="90" inputMode="numeric" />
          <button type="submit">Approve</button>
          <button
            type="button"
            class="secondary"
            onClick={() =>
              void decide("/v1/auth/device/deny", { user_code: request.userCode }, "Denied. The device was refused.")}
          >
            Deny
          </button>
        </fieldset>
      </form>
      <Status id="device-status" said={said} focusable />
    </section>
  )
}
