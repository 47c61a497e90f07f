/**
 * The settings whose value is more than a number or a word, each parsed and checked whole when read
 * (mail, secret keys, OIDC providers, extra CA certificates, the database, the host id), so that a
 * wrong value stops the start with one line naming its variable. AppConfig.ts reads them all.
 */
import { Config, Option, Redacted, Schema } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { certificatesIn } from "../tls/Certificates.js"
import { bad, ok, type Parsed } from "./Parsing.js"

export type MailSetting =
  | { readonly kind: "outbox"; readonly dir: string }
  | { readonly kind: "smtp"; readonly url: Redacted.Redacted<string> }
  | { readonly kind: "off" }

export type SecretKeysSetting =
  | { readonly kind: "generated" }
  | { readonly kind: "none" }
  | { readonly kind: "given"; readonly keys: ReadonlyArray<Redacted.Redacted<Buffer>> }

export const OidcProviderConfig = Schema.Struct({
  name: Schema.String,
  display_name: Schema.String,
  issuer: Schema.String,
  client_id: Schema.String,
  client_secret: Schema.String,
  default: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
export type OidcProviderConfig = typeof OidcProviderConfig.Type

/** A host id: 1-63 of `[a-z0-9-]` (a DNS label's letters, lower case). */
export const hostIdPattern = /^[a-z0-9-]{1,63}$/

/** `SVC_HOST_ID` when unset: the machine's hostname, lower-cased. */
export const defaultHostId = () => NodeOs.hostname().toLowerCase()

export const mailSetting = (dataDir: string) =>
  Config.string("SVC_MAIL").pipe(
    Config.option,
    Config.mapOrFail((value): Parsed<MailSetting> => {
      if (Option.isNone(value)) return ok({ kind: "outbox", dir: NodePath.join(dataDir, "outbox") })
      const text = value.value.trim()
      if (text === "off") return ok({ kind: "off" })
      if (text.startsWith("outbox:") && text.length > "outbox:".length) {
        return ok({ kind: "outbox", dir: NodePath.resolve(text.slice("outbox:".length)) })
      }
      if (/^smtps?:\/\//.test(text)) {
        try {
          new URL(text)
          return ok({ kind: "smtp", url: Redacted.make(text) })
        } catch {
          return bad("SVC_MAIL", "not a valid smtp:// URL")
        }
      }
      return bad("SVC_MAIL", "expected smtp://user:pass@host:port, outbox:DIR or off")
    })
  )

export const secretKeysSetting = Config.string("SVC_SECRET_KEYS").pipe(
  Config.option,
  Config.mapOrFail((value): Parsed<SecretKeysSetting> => {
    if (Option.isNone(value)) return ok({ kind: "generated" })
    if (value.value.trim() === "none") return ok({ kind: "none" })
    const keys: Array<Redacted.Redacted<Buffer>> = []
    for (const part of value.value.split(",")) {
      const key = Buffer.from(part.trim(), "base64")
      if (key.length !== 32) return bad("SVC_SECRET_KEYS", "each key must be base64 of exactly 32 bytes")
      keys.push(Redacted.make(key))
    }
    return ok({ kind: "given", keys })
  })
)

/** An `http://` issuer is accepted only on this host's loopback (homelabs and tests; extensions.md §17). */
export const loopbackHttp = (issuer: URL) =>
  issuer.protocol === "http:" &&
  (issuer.hostname === "localhost" || issuer.hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(issuer.hostname))

const issuerProblem = (issuer: string) => {
  try {
    const url = new URL(issuer)
    return url.protocol === "https:" || loopbackHttp(url)
      ? undefined
      : "an issuer must be https (http only on loopback)"
  } catch {
    return "an issuer is not a URL"
  }
}

export const oidcProviders = Config.string("SVC_OIDC_PROVIDERS").pipe(
  Config.option,
  Config.mapOrFail((value): Parsed<ReadonlyArray<OidcProviderConfig>> => {
    if (Option.isNone(value)) return ok([])
    try {
      const decoded = Schema.decodeUnknownEither(Schema.Array(OidcProviderConfig))(JSON.parse(value.value))
      if (decoded._tag === "Left") {
        return bad(
          "SVC_OIDC_PROVIDERS",
          "expected a JSON array of {name, display_name, issuer, client_id, client_secret}"
        )
      }
      const providers = decoded.right
      const problem = providers.map((provider) => issuerProblem(provider.issuer)).find((p) => p !== undefined) ??
        (new Set(providers.map((provider) => provider.name)).size < providers.length
          ? "names must differ"
          : undefined) ??
        (providers.some((provider) => provider.name === "email")
          ? "the name email is taken by email sign-in"
          : undefined) ??
        (providers.filter((provider) => provider.default).length > 1
          ? "at most one provider is the default"
          : undefined)
      return problem === undefined ? ok(providers) : bad("SVC_OIDC_PROVIDERS", problem)
    } catch {
      return bad("SVC_OIDC_PROVIDERS", "not valid JSON")
    }
  })
)

/** `SVC_EXTRA_CA_CERTS`: a PEM file read and checked now, so that a wrong path stops the start. */
export const extraCaCerts = Config.string("SVC_EXTRA_CA_CERTS").pipe(
  Config.option,
  Config.mapOrFail((value): Parsed<ReadonlyArray<string> | undefined> => {
    if (Option.isNone(value) || value.value.trim() === "") return ok(undefined)
    const file = value.value.trim()
    let text: string
    try {
      text = NodeFs.readFileSync(file, "utf8")
    } catch (error) {
      return bad("SVC_EXTRA_CA_CERTS", `cannot read ${file}: ${(error as Error).message}`)
    }
    const found = certificatesIn(text)
    return typeof found === "string" ? bad("SVC_EXTRA_CA_CERTS", `${file} ${found}`) : ok(found)
  })
)

/** `SVC_DATABASE_URL`: the SQLite file (the data dir's by default), or a PostgreSQL database (extensions.md §21). */
export const database = (dataDir: string) =>
  Config.string("SVC_DATABASE_URL").pipe(
    Config.option,
    Config.mapOrFail((value): Parsed<{ readonly file: string; readonly postgresUrl?: string }> => {
      const file = NodePath.join(dataDir, "svc.db")
      if (Option.isNone(value)) return ok({ file })
      const url = value.value.trim()
      if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
        try {
          new URL(url)
        } catch {
          return bad("SVC_DATABASE_URL", "not a valid postgres:// URL")
        }
        return ok({ file, postgresUrl: url })
      }
      if (url.startsWith("sqlite:")) return ok({ file: NodePath.resolve(url.slice("sqlite:".length)) })
      if (url === ":memory:") return ok({ file: url })
      return bad("SVC_DATABASE_URL", "expected sqlite:PATH or a postgres:// URL")
    })
  )

/** `SVC_HOST_ID`: checked here, so a hostname that is no host id stops the start with one line. */
export const hostIdSetting = Config.string("SVC_HOST_ID").pipe(
  Config.withDefault(defaultHostId()),
  Config.mapOrFail((value): Parsed<string> =>
    hostIdPattern.test(value.trim())
      ? ok(value.trim())
      : bad("SVC_HOST_ID", `"${value}" is not a host id: 1-63 of a-z, 0-9 and -; set SVC_HOST_ID`)
  )
)
