/**
 * The certificate authorities svc's outbound TLS clients trust (OIDC, SMTP, webhooks, Stripe):
 * Node's default store (its bundled Mozilla roots, plus the file of `NODE_EXTRA_CA_CERTS`, which
 * Node reads once at start) and the certificates of `SVC_EXTRA_CA_CERTS` (docs/configuration.md).
 *
 * Node's `ca` option replaces the default store instead of adding to it, so each client is given
 * the whole list. Without `SVC_EXTRA_CA_CERTS` every client keeps Node's default untouched.
 */
import * as NodeFs from "node:fs"
import * as NodeTls from "node:tls"
import { Agent, fetch as undiciFetch } from "undici"
import { certificatesIn } from "./Certificates.js"

/** What Node trusts by default: `tls.getCACertificates("default")` where Node has it (22.15+). */
const nodeDefaults = (): ReadonlyArray<string> => {
  const get = (NodeTls as { getCACertificates?: (kind: string) => ReadonlyArray<string> }).getCACertificates
  if (get !== undefined) return get("default")
  const extraFile = process.env.NODE_EXTRA_CA_CERTS
  let extra: ReadonlyArray<string> = []
  if (extraFile !== undefined && extraFile !== "") {
    try {
      const found = certificatesIn(NodeFs.readFileSync(extraFile, "utf8"))
      extra = typeof found === "string" ? [] : found
    } catch {
      // Node itself only warns about an unreadable file at start, and trusts the rest.
    }
  }
  return [...NodeTls.rootCertificates, ...extra]
}

/** The `ca` option for a TLS client: undefined (Node's default) without extra certificates. */
export const trustedCas = (extra: ReadonlyArray<string> | undefined): ReadonlyArray<string> | undefined =>
  extra === undefined || extra.length === 0 ? undefined : [...nodeDefaults(), ...extra]

/**
 * A `fetch` that trusts `trustedCas(extra)` (undici's, the engine of Node's own `fetch`, which takes
 * no CA option), or undefined when Node's `fetch` already trusts the same.
 */
export const trustingFetch = (extra: ReadonlyArray<string> | undefined): TrustingFetch | undefined => {
  const ca = trustedCas(extra)
  if (ca === undefined) return undefined
  const dispatcher = new Agent({ connect: { ca: [...ca] } })
  return (url, init) => undiciFetch(url, { ...init, dispatcher }) as unknown as Promise<Response>
}

/** `fetch(url, init)` as openid-client's `customFetch` calls it. */
export type TrustingFetch = (url: string, init: object) => Promise<Response>
