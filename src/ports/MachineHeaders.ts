/**
 * The headers that cross the port proxy, both ways (extensions.md §5, Isolation). A machine's
 * program is a stranger to svc: on the way in it gets none of svc's credentials (its session and
 * CSRF cookies, the port token, a key, svc's own `x-svc-*` headers); on the way out its answer
 * loses every header that acts on the origin rather than on the one document (cookies, HSTS,
 * Alt-Svc, Clear-Site-Data, service worker scope, reporting and client hints policies) and gains
 * `Content-Security-Policy: sandbox` without `allow-same-origin`, so its scripts run in an opaque
 * origin: no svc cookies to read, no same-origin calls to svc's API, no service worker.
 *
 * On an origin of its own (`SVC_PORTS_URL`) the origin is the machine's, so its answer keeps its
 * headers and gets no sandbox; only a cookie's `Domain` goes (host-only): a machine must not set
 * cookies on its parent domain, svc's or another machine's.
 */

type Headers = Record<string, string | ReadonlyArray<string>>

/** Headers of one hop (RFC 9110 §7.6.1), never forwarded as they are. */
export const hopByHop: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/**
 * What the browser applies to the whole origin (or beyond the answer's document), so a machine
 * must not send it on svc's origin.
 */
export const originWideHeaders: ReadonlySet<string> = new Set([
  "set-cookie",
  "set-cookie2",
  "clear-site-data",
  "strict-transport-security",
  "alt-svc",
  "service-worker-allowed",
  "nel",
  "report-to",
  "reporting-endpoints",
  "accept-ch",
  "critical-ch",
  "origin-trial",
  "origin-agent-cluster",
  "expect-ct",
  "public-key-pins",
  "public-key-pins-report-only"
])

/**
 * The policy every answer of a machine carries on svc's origin: scripts, forms, popups and the
 * like work, but the document's origin is opaque (no `allow-same-origin`) and it cannot navigate
 * svc's window elsewhere (no `allow-top-navigation`).
 */
export const SANDBOX_POLICY =
  "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads allow-pointer-lock " +
  "allow-orientation-lock allow-presentation"

/** svc's cookies: its session, CSRF, port token, sign-in state; all named `svc_`. */
const isSvcCookie = (name: string) => name.toLowerCase().startsWith("svc_")

/** svc's request headers: the CSRF and organization headers and every `x-svc-*` (port and operator tokens). */
const isSvcHeader = (name: string) =>
  name === "x-csrf-token" || name === "x-organization-id" || name.startsWith("x-svc-")

/** An `Authorization` that carries an svc key (or anything shaped like one): never the machine's. */
const isSvcAuthorization = (value: string) => /^\s*bearer\s+svc_/i.test(value)

const asList = (value: string | ReadonlyArray<string>): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : value

/** The Cookie header without svc's cookies, or undefined when nothing is left. */
export const cookiesForMachine = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const kept = header.split(";").map((part) => part.trim()).filter((part) => {
    if (part === "") return false
    const equals = part.indexOf("=")
    return !isSvcCookie(equals < 0 ? part : part.slice(0, equals).trim())
  })
  return kept.length === 0 ? undefined : kept.join("; ")
}

/**
 * A request's headers for the machine: one hop's taken off (an upgrade's kept when `upgrading`),
 * and svc's cookies, credentials and own headers.
 */
export const requestHeadersForMachine = (
  incoming: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  upgrading: boolean
): Headers => {
  const headers: Headers = {}
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || isSvcHeader(name) || (!upgrading && hopByHop.has(name))) continue
    if (name === "cookie") {
      const kept = cookiesForMachine(asList(value).join("; "))
      if (kept !== undefined) headers.cookie = kept
      continue
    }
    if (name === "authorization" && asList(value).some(isSvcAuthorization)) continue
    headers[name] = value
  }
  return headers
}

/** Where the machine's answer is shown: on svc's origin (sandboxed) or on an origin of its own. */
export type AnswerOrigin = "svc" | "own"

/** A Set-Cookie line without its `Domain` attribute: a host-only cookie of the port's own origin. */
const hostOnly = (line: string) =>
  line.split(";").filter((part, i) => i === 0 || !/^\s*domain\s*=/i.test(part)).join(";")

/**
 * The machine's answer headers as the browser gets them: one hop's taken off (an upgrade's kept on
 * a 101), origin-wide ones dropped and the sandbox policy added on svc's origin (next to the
 * machine's own policy: a browser enforces every policy it is given), cookies host-only on an
 * origin of its own.
 */
export const responseHeadersFromMachine = (
  incoming: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  origin: AnswerOrigin,
  upgraded = false
): Headers => {
  const headers: Headers = {}
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue
    if (hopByHop.has(name) && !(upgraded && (name === "connection" || name === "upgrade"))) continue
    if (origin === "svc" && originWideHeaders.has(name)) continue
    if (origin === "own" && name === "set-cookie") {
      headers[name] = asList(value).map(hostOnly)
      continue
    }
    headers[name] = value
  }
  if (origin === "svc") {
    const own = headers["content-security-policy"]
    headers["content-security-policy"] = own === undefined ? SANDBOX_POLICY : [...asList(own), SANDBOX_POLICY]
  }
  return headers
}

/**
 * The head of a raw HTTP/1.1 answer (status line and headers, up to the blank line), parsed; for
 * the answer to an upgrade, which the proxy relays byte for byte once its head is filtered.
 */
export const parseAnswerHead = (
  head: string
): { readonly statusLine: string; readonly headers: Record<string, Array<string>> } | undefined => {
  const lines = head.split("\r\n")
  const statusLine = lines[0] ?? ""
  if (!/^HTTP\/1\.[01] \d{3}/.test(statusLine)) return undefined
  const headers: Record<string, Array<string>> = {}
  for (const line of lines.slice(1)) {
    if (line === "") continue
    const colon = line.indexOf(":")
    if (colon <= 0) return undefined
    const name = line.slice(0, colon).trim().toLowerCase()
    ;(headers[name] ??= []).push(line.slice(colon + 1).trim())
  }
  return { statusLine, headers }
}

/** A raw answer head from a status line and headers, ending with the blank line. */
export const formatAnswerHead = (statusLine: string, headers: Headers): string => {
  const lines = [statusLine]
  for (const [name, value] of Object.entries(headers)) {
    for (const one of asList(value)) lines.push(`${name}: ${one}`)
  }
  return `${lines.join("\r\n")}\r\n\r\n`
}
