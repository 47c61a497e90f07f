/**
 * A Stripe-compatible server on loopback for the payment tests (Stripe's own servers cannot be
 * reached here): the official `stripe` client talks to it through `SVC_STRIPE_API_BASE` in
 * Stripe's wire format: form-encoded requests with bracketed keys, Stripe's JSON objects, Stripe's
 * error shape (`{error: {type, message, code}}`) and its `Idempotency-Key` replays. It keeps every
 * request it got, and can be told to fail (500) or to hang. `sign` makes an event's body and
 * `Stripe-Signature` header the way Stripe signs them.
 */
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import Stripe from "stripe"

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly body: Record<string, any>
  readonly idempotencyKey: string | undefined
}

/** `a[b][0][c]=x` into `{a: {b: [{c: "x"}]}}`, as Stripe reads its form bodies. */
export const decodeForm = (text: string): Record<string, any> => {
  const root: Record<string, any> = {}
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.replace(/\]/g, "").split("[")
    let node: any = root
    parts.forEach((part, index) => {
      const last = index === parts.length - 1
      const nextIsIndex = !last && /^\d+$/.test(parts[index + 1]!)
      if (last) node[part] = value
      else node = node[part] ??= nextIsIndex ? [] : {}
    })
  }
  return root
}

const id = (prefix: string) => `${prefix}_${NodeCrypto.randomBytes(12).toString("hex")}`

export const webhookSecret = "whsec_test_secret"
export const secretKey = "sk_test_svc"

export const startStripeServer = Effect.gen(function*() {
  const requests: Array<Recorded> = []
  const customers = new Map<string, any>()
  const subscriptions = new Map<string, any>()
  const replays = new Map<string, string>()
  const state = { failing: false, hanging: false }
  const error = (res: NodeHttp.ServerResponse, status: number, type: string, message: string, code?: string) => {
    res.writeHead(status, { "content-type": "application/json", "request-id": id("req") })
    res.end(JSON.stringify({ error: { type, message, ...(code === undefined ? {} : { code }) } }))
  }
  const route = (method: string, path: string, body: Record<string, any>): [number, any] => {
    const now = Math.floor(Date.now() / 1000)
    let match: RegExpMatchArray | null
    if (method === "POST" && path === "/v1/customers") {
      const customer = {
        id: id("cus"),
        object: "customer",
        created: now,
        metadata: body.metadata ?? {},
        invoice_settings: { default_payment_method: null }
      }
      customers.set(customer.id, customer)
      return [200, customer]
    }
    if ((match = path.match(/^\/v1\/customers\/([^/]+)$/)) !== null) {
      const customer = customers.get(match[1]!)
      return customer === undefined ? [404, null] : [200, customer]
    }
    if (method === "POST" && path === "/v1/checkout/sessions") {
      const sessionId = id("cs_test")
      return [200, {
        id: sessionId,
        object: "checkout.session",
        mode: body.mode,
        customer: body.customer ?? null,
        client_reference_id: body.client_reference_id ?? null,
        metadata: body.metadata ?? {},
        status: "open",
        url: `https://checkout.stripe.test/c/pay/${sessionId}`
      }]
    }
    if (method === "POST" && path === "/v1/billing_portal/sessions") {
      if (!customers.has(body.customer)) return [404, null]
      return [200, {
        id: id("bps"),
        object: "billing_portal.session",
        customer: body.customer,
        url: `https://billing.stripe.test/p/session/${id("s")}`
      }]
    }
    if (method === "POST" && (match = path.match(/^\/v1\/subscriptions\/([^/]+)$/)) !== null) {
      const subscription = subscriptions.get(match[1]!)
      if (subscription === undefined) return [404, null]
      if (body.cancel_at_period_end !== undefined) {
        subscription.cancel_at_period_end = body.cancel_at_period_end === "true"
      }
      return [200, subscription]
    }
    if (method === "POST" && path === "/v1/payment_intents") {
      return [200, {
        id: id("pi"),
        object: "payment_intent",
        amount: Number(body.amount),
        currency: body.currency,
        customer: body.customer,
        metadata: body.metadata ?? {},
        status: "processing"
      }]
    }
    return [404, null]
  }
  const server = NodeHttp.createServer((req, res) => {
    let text = ""
    req.on("data", (chunk) => (text += chunk))
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0]!
      const body = decodeForm(text)
      const idempotencyKey = req.headers["idempotency-key"] as string | undefined
      requests.push({ method: req.method ?? "", path, body, idempotencyKey })
      if (state.hanging) return
      if (req.headers.authorization !== `Bearer ${secretKey}`) {
        return error(res, 401, "invalid_request_error", "Invalid API Key provided")
      }
      if (state.failing) return error(res, 500, "api_error", "Something went wrong on Stripe's end")
      const replayKey = idempotencyKey === undefined ? undefined : `${req.method} ${path} ${idempotencyKey}`
      const replayed = replayKey === undefined ? undefined : replays.get(replayKey)
      if (replayed !== undefined) {
        res.writeHead(200, { "content-type": "application/json", "idempotent-replayed": "true" })
        return res.end(replayed)
      }
      const [status, object] = route(req.method ?? "", path, body)
      if (status === 404) {
        return error(res, 404, "invalid_request_error", `No such resource: ${path}`, "resource_missing")
      }
      const json = JSON.stringify(object)
      if (replayKey !== undefined) replays.set(replayKey, json)
      res.writeHead(status, { "content-type": "application/json", "request-id": id("req") })
      res.end(json)
    })
  })
  const sockets = new Set<NodeNet.Socket>()
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  const port = yield* Effect.async<number>((resume) => {
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as NodeNet.AddressInfo).port)))
  })
  yield* Effect.addFinalizer(() =>
    Effect.async<void>((resume) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resume(Effect.void))
    })
  )
  const signer = new Stripe(secretKey)
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    state,
    customers,
    /** A subscription the fake knows (checkout completed for a plan). */
    addSubscription: (customer: string, metadata: Record<string, string>) => {
      const subscription = {
        id: id("sub"),
        object: "subscription",
        customer,
        status: "active",
        cancel_at_period_end: false,
        metadata
      }
      subscriptions.set(subscription.id, subscription)
      return subscription
    },
    subscriptions,
    /** An event as Stripe sends it: its JSON body and the `Stripe-Signature` header for it. */
    sign: (
      type: string,
      object: Record<string, unknown>,
      options: { id?: string; secret?: string; timestamp?: number } = {}
    ) => {
      const payload = JSON.stringify({
        id: options.id ?? id("evt"),
        object: "event",
        api_version: "2025-01-27.acacia",
        created: Math.floor(Date.now() / 1000),
        type,
        livemode: false,
        pending_webhooks: 1,
        data: { object }
      })
      const header = signer.webhooks.generateTestHeaderString({
        payload,
        secret: options.secret ?? webhookSecret,
        ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
      })
      return { payload, header }
    }
  }
})

export type StripeServer = Effect.Effect.Success<typeof startStripeServer>

/** The settings of a server that pays through `stripe`. */
export const stripeSettings = (stripe: StripeServer, timeoutSeconds = 10) => ({
  secretKey: Redacted.make(secretKey),
  webhookSecret: Redacted.make(webhookSecret),
  apiBase: stripe.url,
  prices: { starter: "price_starter", pro: "price_pro", team: "price_team", scale: "price_scale" },
  timeoutSeconds
})
