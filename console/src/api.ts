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

/** The headers every call sends: the organization, and the CSRF token on a change. */
const baseHeaders = (method: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (method !== "GET") headers["x-csrf-token"] = csrf()
  if (organization !== "") headers["x-organization-id"] = organization
  return headers
}

export async function call<A>(
  method: string,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {}
): Promise<A> {
  const headers: Record<string, string> = { accept: "application/json", ...baseHeaders(method), ...extra }
  if (body !== undefined) headers["content-type"] = "application/json"
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
  throw problemOf(response.status, data)
}

const problemOf = (status: number, data: any) => {
  if (status === 401) signInAgain()
  const fields = Array.isArray(data?.field_errors)
    ? data.field_errors.map((field: any) => `${field.field} ${field.message}`).join("; ")
    : ""
  return new Problem(
    status,
    typeof data?.code === "string" ? data.code : `http_${status}`,
    fields !== "" ? fields : typeof data?.detail === "string" ? data.detail : `The request failed (${status}).`
  )
}

export const get = <A>(path: string) => call<A>("GET", path)
export const post = <A>(path: string, body: unknown = {}) => call<A>("POST", path, body)
/** A fresh key (crypto.randomUUID needs a secure context; a homelab's http:// address is none). */
const freshKey = () =>
  Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("")
/** A change that may be retried safely: a fresh idempotency key per press of its button. */
export const postOnce = <A>(path: string, body: unknown = {}) =>
  call<A>("POST", path, body, { "idempotency-key": freshKey() })
export const del = <A>(path: string) => call<A>("DELETE", path)

/** A problem in words: its code and detail. */
export const describe = (error: unknown) =>
  error instanceof Problem ? `${error.detail} (${error.code})` : error instanceof Error ? error.message : String(error)

export interface StreamEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/**
 * Reads a server-sent event stream with fetch (EventSource cannot send the organization header a
 * session needs): each event as it comes, until the server ends the stream or `signal` aborts it.
 * `after` resumes past an event id (`Last-Event-ID`), so a reopened stream repeats nothing.
 */
export async function stream(
  path: string,
  onEvent: (event: StreamEvent) => void,
  signal: AbortSignal,
  after?: string
): Promise<void> {
  const headers: Record<string, string> = { accept: "text/event-stream", ...baseHeaders("GET") }
  if (after !== undefined) headers["last-event-id"] = after
  const response = await fetch(apiBase + path, { headers, credentials: "include", signal })
  if (!response.ok) {
    const text = await response.text()
    let data: any = null
    try {
      data = JSON.parse(text)
    } catch {
      data = null
    }
    throw problemOf(response.status, data)
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += value.replace(/\r\n?/g, "\n")
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      let id: string | undefined
      let event = "message"
      const data: Array<string> = []
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":")
        if (colon === 0) continue
        const field = colon === -1 ? line : line.slice(0, colon)
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
        if (field === "id") id = value
        else if (field === "event") event = value
        else if (field === "data") data.push(value)
      }
      if (data.length > 0) onEvent({ id, event, data: data.join("\n") })
    }
  }
}
