/**
 * The console's document and files. The document is tiny and made per request: it names the API
 * and the pages (`<meta>`), the entry script and stylesheet, what svc knows of a page shown outside
 * an organization (sign-in, device, invitation, account: escaped JSON in a `<meta>`), and a fresh
 * nonce that only the terminal's own style elements use (xterm.js makes some). Scripts come only
 * from svc's own files (`script-src 'self'`): no inline script runs.
 */
import { HttpServerResponse } from "@effect/platform"
import type { ConsoleBuild } from "../../console/build.mjs"
import { randomToken } from "../kernel/crypto/Tokens.js"
import { gzipOf } from "./ConsoleAssets.js"
import type { PageData } from "./PageData.js"

/** Text for an HTML attribute or element: nothing inserted can become markup. */
export const escapeHtml = (value: string) => value.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`)

/** An HTML document as a response: never cached, never framed, under the given policy's directives. */
export const htmlResponse = (html: string, policy: ReadonlyArray<string>, status = 200) =>
  HttpServerResponse.text(html, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: {
      "cache-control": "no-store",
      "x-frame-options": "DENY",
      "referrer-policy": "same-origin",
      "content-security-policy": ["default-src 'none'", ...policy, "base-uri 'none'", "frame-ancestors 'none'"]
        .join("; ")
    }
  })

/** A redirect from a page (to sign in first, for instance). */
export const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 303 })

export interface ConsoleSpec {
  readonly build: ConsoleBuild
  readonly apiBase: string
  readonly uiUrl: string
  /** The UI's path prefix, where `assets/` is. */
  readonly uiPath: string
  /** A page outside an organization, and the status it is served with. */
  readonly page?: PageData
  readonly status?: number
}

/** The title a browser shows for each page (the console's views set their own once loaded). */
const titles: Record<PageData["page"], string> = {
  "sign-in": "Sign in",
  device: "Connect a device",
  invitation: "Invitation",
  account: "Your account"
}

export const consoleDocument = (spec: ConsoleSpec) => {
  const nonce = randomToken(16)
  const asset = (name: string) => escapeHtml(`${spec.uiPath}/assets/${name}`)
  const title = spec.page === undefined ? "svc console" : `${titles[spec.page.page]} · svc`
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title}</title><link rel="icon" href="data:,">
<meta name="svc-api" content="${escapeHtml(spec.apiBase)}"><meta name="svc-ui" content="${escapeHtml(spec.uiUrl)}">
<meta name="svc-nonce" content="${nonce}">${
    spec.page === undefined ? "" : `\n<meta name="svc-page" content="${escapeHtml(JSON.stringify(spec.page))}">`
  }
${spec.build.style === undefined ? "" : `<link rel="stylesheet" href="${asset(spec.build.style)}">`}
<script type="module" src="${asset(spec.build.script)}"></script>
</head><body><div id="app"></div><noscript>The console needs JavaScript.</noscript></body></html>`
  const api = new URL(spec.apiBase)
  const socket = `${api.protocol === "https:" ? "wss:" : "ws:"}//${api.host}`
  return htmlResponse(html, [
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    `connect-src 'self' ${api.origin} ${socket}`,
    "img-src 'self' data: blob:",
    "form-action 'self'"
  ], spec.status)
}

/** One of the build's files: named by its content's hash, so cached for good; gzipped when accepted. */
export const consoleFile = (build: ConsoleBuild, name: string, gzip: boolean) => {
  const file = build.files[name]
  if (file === undefined) return HttpServerResponse.text("Not found", { status: 404 })
  const headers = {
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    vary: "accept-encoding"
  }
  return gzip
    ? HttpServerResponse.uint8Array(gzipOf(name, file.text), {
      contentType: file.contentType,
      headers: { ...headers, "content-encoding": "gzip" }
    })
    : HttpServerResponse.text(file.text, { contentType: file.contentType, headers })
}
