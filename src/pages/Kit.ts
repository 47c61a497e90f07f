/**
 * The page kit: what every page svc serves at `{ui_url}` shares. Plain server-rendered HTML with one
 * small inline stylesheet and a little inline script (no build step, no external assets: svc runs
 * offline), escaped by construction (`html` escapes every value it did not make itself), under a
 * strict Content-Security-Policy whose nonce admits only the page's own style and script.
 *
 * A page: `layout({ title, body: html\`...\`, script })` and `pageResponse(page)`. The script gets
 * `svc.api(method, path, body, organizationId)` (JSON, CSRF header from the `svc_csrf` cookie) and
 * `svc.say(element, text, kind)` (an aria-live status line) from the kit.
 */
import { HttpServerResponse } from "@effect/platform"
import { randomToken } from "../kernel/crypto/Tokens.js"

/** HTML the kit made: inserted as it is. Anything else inserted into `html` is escaped. */
export class Html {
  constructor(readonly text: string) {}
  toString() {
    return this.text
  }
}

export const escapeHtml = (value: string) => value.replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`)

type Part = Html | string | number | boolean | null | undefined | ReadonlyArray<Part>

const render = (part: Part): string => {
  if (part === null || part === undefined || part === false) return ""
  if (part instanceof Html) return part.text
  if (Array.isArray(part)) return part.map(render).join("")
  return escapeHtml(String(part))
}

/** A fragment of HTML: literal text as written, every `${value}` escaped (arrays joined, null/false empty). */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Part>) =>
  new Html(strings.reduce((out, text, i) => out + text + (i < values.length ? render(values[i]!) : ""), ""))

/** A value for an inline script: JSON that cannot close the script element. */
export const scriptValue = (value: unknown) =>
  new Html(JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029"))

const styles = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#f6f7f9;--card:#fff;--muted:#5b6470;--line:#d4d9e0;
--accent:#1f5fbf;--accent-fg:#fff;--bad:#b42318;--good:#16794c;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ee;--bg:#12151a;--card:#1b2027;--muted:#a3acb8;--line:#353c46;
--accent:#6ea2ff;--accent-fg:#0b1220;--bad:#ff8a80;--good:#6fdca4}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg)}
header{padding:.75rem 1rem;border-bottom:1px solid var(--line);display:flex;justify-content:space-between;align-items:center}
header a{color:var(--fg);font-weight:700;text-decoration:none}
main{max-width:32rem;margin:1.5rem auto;padding:0 1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:1.25rem;margin-bottom:1rem}
h1{font-size:1.4rem;margin:0 0 1rem}h2{font-size:1.1rem;margin:0 0 .75rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input,select{width:100%;font:inherit;padding:.55rem .6rem;border:1px solid var(--line);border-radius:.35rem;background:var(--bg);color:var(--fg)}
button,.button{display:inline-block;font:inherit;font-weight:600;padding:.55rem 1rem;margin:.75rem .5rem 0 0;border-radius:.35rem;
border:1px solid var(--accent);background:var(--accent);color:var(--accent-fg);cursor:pointer;text-decoration:none;text-align:center}
button.secondary,.button.secondary{background:transparent;color:var(--accent)}
button:disabled{opacity:.6;cursor:not-allowed}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.muted{color:var(--muted);font-size:.9rem}.error{color:var(--bad)}.ok{color:var(--good)}
.status{margin-top:.75rem}.status:empty{margin:0}.code{font:700 1.6rem/1.2 ui-monospace,monospace;letter-spacing:.15em}
ul.plain{list-style:none;padding:0;margin:0}ul.plain li{padding:.4rem 0;border-bottom:1px solid var(--line)}
.stack>*{display:block;width:100%}.hidden{display:none}
`

/** The kit's script: the API call with CSRF, and the status line. */
const kitScript = `
const svc = {
  csrf() { const m = document.cookie.match(/(?:^|; )svc_csrf=([^;]*)/); return m ? decodeURIComponent(m[1]) : "" },
  async api(method, path, body, organizationId) {
    const headers = { "accept": "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET") headers["x-csrf-token"] = svc.csrf();
    if (organizationId) headers["x-organization-id"] = organizationId;
    const response = await fetch(svc.base + path, { method, headers, credentials: "include",
      body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let data = null; try { data = text ? JSON.parse(text) : null } catch (e) { data = null }
    return { ok: response.ok, status: response.status, data };
  },
  say(element, text, kind) { element.textContent = text; element.className = "status " + (kind || "") },
  problem(reply) { const d = reply.data || {};
    if (reply.status === 429) return "Too many attempts. Wait a moment and try again.";
    return (d.field_errors && d.field_errors.length ? d.field_errors.map(f => f.field + " " + f.message).join("; ") : d.detail) || ("Request failed (" + reply.status + ")") }
};
`

export interface PageSpec {
  readonly title: string
  readonly body: Html
  /** The page's own script (vanilla, runs after the kit's `svc`). */
  readonly script?: string
  /** Where the API is (`{base_url}`), for the script's calls. */
  readonly apiBase: string
  /** The signed-in user's address, shown in the header with a link home. */
  readonly signedInAs?: string | undefined
}

export interface Page {
  readonly html: string
  readonly nonce: string
  readonly apiBase: string
}

/** A whole document: header, main, the kit's style and script under a fresh nonce. */
export const layout = (spec: PageSpec): Page => {
  const nonce = randomToken(16)
  const document = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${spec.title} · svc</title><style nonce="${nonce}">${new Html(styles)}</style></head>
<body><header><a href="/">svc</a>${
    spec.signedInAs === undefined ? null : html`<span class="muted">${spec.signedInAs}</span>`
  }</header>
<main id="main">${spec.body}</main>
<script nonce="${nonce}">${new Html(kitScript)}svc.base = ${scriptValue(spec.apiBase)};
${new Html(spec.script ?? "")}</script></body></html>`
  return { html: document.text, nonce, apiBase: spec.apiBase }
}

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

/** The page as a response: only its own style and script run. */
export const pageResponse = (page: Page, status = 200) =>
  htmlResponse(page.html, [
    `style-src 'nonce-${page.nonce}'`,
    `script-src 'nonce-${page.nonce}'`,
    `connect-src 'self' ${new URL(page.apiBase).origin}`,
    "img-src 'self' data:",
    "form-action 'self'"
  ], status)

/** A redirect from a page (to sign in first, for instance). */
export const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 303 })
