/**
 * A real OpenID provider for the sign-in tests: `oidc-provider` (the certified Node.js OP) on a
 * loopback port in the test process, with one confidential client for svc; plain http, or https
 * with a certificate of the test CA (Tls.ts) for 127.0.0.1. Its login and consent
 * interactions are answered by the test: `next` says who signs in next (or that the person
 * refuses), so a plain HTTP client or a browser passes through without a form.
 */
import { Effect } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeHttp from "node:http"
import * as NodeHttps from "node:https"
import type * as NodeNet from "node:net"
import type { ServerCertificate } from "./Tls.js"

export interface TestAccount {
  readonly sub: string
  readonly email?: string
  readonly email_verified?: boolean
}

export interface TestProvider {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  /** Who the next interaction signs in as, or "refuse" for the person saying no. */
  next: TestAccount | "refuse"
  /** While true the provider drops every connection (unreachable). */
  down: boolean
  /** Registers svc's callback as the client's redirect URI (svc's port is known only once it runs). */
  readonly allow: (redirectUri: string) => void
  /** The provider setting for svc (`SVC_OIDC_PROVIDERS` entry). */
  readonly setting: (name?: string) => {
    name: string
    display_name: string
    issuer: string
    client_id: string
    client_secret: string
    default: boolean
  }
}

// oidc-provider ships no types; only its documented surface is used here.
const oidcProviderModule = "oidc-provider"

/** The provider over https with `certificate` (for 127.0.0.1), else over plain http. */
export const startProviderWith = (certificate?: ServerCertificate) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const { default: Provider } = (await import(oidcProviderModule)) as { default: any }
      const accounts = new Map<string, TestAccount>()
      const signingKey = NodeCrypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
        format: "jwk"
      })
      const server = certificate === undefined
        ? NodeHttp.createServer()
        : NodeHttps.createServer({ key: certificate.key, cert: certificate.cert })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const port = (server.address() as NodeNet.AddressInfo).port
      const issuer = `${certificate === undefined ? "http" : "https"}://127.0.0.1:${port}`
      const clientId = "svc-test"
      const clientSecret = "svc-test-secret-0123456789abcdef0123456789"
      const configure = (redirectUri: string) =>
        new Provider(issuer, {
          clients: [{
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            token_endpoint_auth_method: "client_secret_post"
          }],
          cookies: { keys: ["test-cookie-key-0123456789"] },
          jwks: { keys: [signingKey] },
          claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
          scopes: ["openid", "email", "profile"],
          features: { devInteractions: { enabled: false } },
          pkce: { required: () => true },
          interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
          findAccount: (_ctx: unknown, id: string) => {
            const account = accounts.get(id)
            return account === undefined ? undefined : { accountId: id, claims: () => ({ ...account }) }
          }
        })
      let provider: any = undefined
      let callback: (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) => void = (_req, res) => {
        res.statusCode = 503
        res.end("no client registered yet")
      }
      const state: TestProvider = {
        issuer,
        clientId,
        clientSecret,
        next: "refuse",
        down: false,
        allow: (redirectUri) => {
          provider = configure(redirectUri)
          callback = provider.callback()
        },
        setting: (name = "testop") => ({
          name,
          display_name: "Test Provider",
          issuer,
          client_id: clientId,
          client_secret: clientSecret,
          default: true
        })
      }
      server.on("request", (req: NodeHttp.IncomingMessage, res: NodeHttp.ServerResponse) => {
        if (state.down) return req.socket.destroy()
        if (!req.url?.startsWith("/interaction/")) return callback(req, res)
        void (async () => {
          const details = await provider.interactionDetails(req, res)
          const next = state.next
          if (next === "refuse") {
            return provider.interactionFinished(req, res, {
              error: "access_denied",
              error_description: "The person refused"
            }, { mergeWithLastSubmission: false })
          }
          accounts.set(next.sub, next)
          const grant = new provider.Grant({ accountId: next.sub, clientId: details.params.client_id })
          grant.addOIDCScope("openid email profile")
          const grantId = await grant.save()
          await provider.interactionFinished(req, res, {
            login: { accountId: next.sub },
            consent: { grantId }
          }, { mergeWithLastSubmission: false })
        })().catch((error) => {
          res.statusCode = 500
          res.end(String(error))
        })
      })
      return { state, server }
    }),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ state }) => state))

export const startProvider = startProviderWith()
