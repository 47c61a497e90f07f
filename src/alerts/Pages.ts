/** The unsubscribe pages: small, self-contained HTML with nothing from the token echoed unescaped. */
import { alertSpecs, type AlertType } from "./Types.js"

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const page = (title: string, body: string) =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
button{font:inherit;padding:.5rem 1rem;cursor:pointer}</style></head>
<body><h1>${escape(title)}</h1>${body}</body></html>
`

/** The GET page: what the link turns off, and a button that posts the same URL. */
export const confirmPage = (type: AlertType, token: string) =>
  page(
    "Unsubscribe from these alerts?",
    `<p>You will no longer get e-mails of this kind (<code>${escape(type)}</code>): ${
      escape(alertSpecs[type].description)
    }</p>
<form method="post" action="?token=${escape(encodeURIComponent(token))}">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button></form>
<p>You can turn it on again in your notification preferences.</p>`
  )

/** The answer to the form's post. */
export const donePage = (type: AlertType) =>
  page(
    "You are unsubscribed",
    `<p>You will no longer get e-mails of this kind (<code>${
      escape(type)
    }</code>). You can turn it on again in your notification preferences.</p>`
  )
