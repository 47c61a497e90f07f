/**
 * Calls to svc's API from the browser: the session cookie, the CSRF header from the `svc_csrf`
 * cookie on every change, the organization in `x-organization-id`. A refusal becomes a `Problem`
 * with the answer's code and detail, shown in words by the views.
 */
const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ""

/** `{base_url}`: where the API is (it may be another origin than the console's). */
export const apiBase = meta("svc-api")
/** `{ui_url}`: where the pages are (sign-in, account). */
export const uiUrl = meta("svc-ui")

export class Problem extends Error {
  constructor(readonly status: number, readonly code: string, readonly detail: string) {
    super(`${code}: ${detail}`)
  }
}

const csrf = () => decodeURIComponent(/(?:^|; )svc_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? "")

let organization = ""
/** The organization the next calls act in. */
export const useOrganization = (id: string) => void (organization = id)

export const signInAgain = () =>
  location.assign(`${uiUrl}/sign-in?return_to=${encodeURIComponent("/" + location.hash)}`)

export async function call<A>(method: string, path: string, body?: unknown): Promise<A> {
  const headers: Record<string, string> = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET") headers["x-csrf-token"] = csrf()
  if (organization !== "") headers["x-organization-id"] = organization
  const init: RequestInit = { method, headers, credentials: "include" }
  if (body !== undefined) init.body = JSON.stringify(body)
  const response = await fetch(apiBase + path, init)
  const text = await response.text()
  let data: any = null
  try {
    data = text === "" ? null : JSON.parse(text)
  } catch {
    data = null
  }
  if (response.ok) return data as A
  if (response.status === 401) signInAgain()
  const fields = Array.isArray(data?.field_errors)
    ? data.field_errors.map((field: any) => `${field.field} ${field.message}`).join("; ")
    : ""
  throw new Problem(
    response.status,
    typeof data?.code === "string" ? data.code : `http_${response.status}`,
    fields !== "" ? fields : typeof data?.detail === "string" ? data.detail : `The request failed (${response.status}).`
  )
}

export const get = <A>(path: string) => call<A>("GET", path)
export const post = <A>(path: string, body: unknown = {}) => call<A>("POST", path, body)
export const del = <A>(path: string) => call<A>("DELETE", path)

/** A problem in words: its code and detail. */
export const describe = (error: unknown) =>
  error instanceof Problem ? `${error.detail} (${error.code})` : error instanceof Error ? error.message : String(error)
