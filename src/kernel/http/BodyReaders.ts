/**
 * How the edge reads a request's body: the text once, within the body limit; JSON no deeper than
 * `maxJsonDepth`; multipart refused; and a body over the limit answered 413 without a reset.
 * Given to each request with a body by src/kernel/http/RequestEdge.ts.
 */
import { HttpServerError, type HttpServerRequest, Multipart } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, type Exit, Stream } from "effect"
import { maxJsonDepth, NestedTooDeeply } from "./Problems.js"

/**
 * A streamed (chunked) body can only be measured while it is read. When it passes the limit the
 * reader destroys the request stream, which resets the socket before the 413 answer is written.
 * For such requests, "destroy" discards the rest of the body instead, so the client reads its 413;
 * Node's request timeout still bounds how long a client may keep sending.
 */
export const discardInsteadOfReset = (request: HttpServerRequest.HttpServerRequest) => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  incoming.destroy = function(this: typeof incoming) {
    this.resume()
    return this
  }
}

/**
 * A body declared larger than the limit is answered 413 without being parsed. Answered at once,
 * the connection closes while the client still sends, and the client sees a reset (EPIPE) instead
 * of the 413 that would tell it to send less (the CLI halves its chunks on it). Up to this size the
 * body is read and thrown away first; beyond it, the client gets the reset.
 */
export const drainUpTo = 64 * 1024 * 1024

export const drained = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.async<void>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    if (incoming.complete) return resume(Effect.void)
    const done = () => resume(Effect.void)
    incoming.once("end", done)
    incoming.once("error", done)
    incoming.once("close", done)
    incoming.resume()
  })

const structural = /["\\[\]{}]/g

/** Whether `text` nests arrays and objects at most `max` deep; one native scan for the few structural characters. */
export const nestsWithin = (text: string, max: number) => {
  let depth = 0
  let inString = false
  structural.lastIndex = 0
  for (let match = structural.exec(text); match !== null; match = structural.exec(text)) {
    const c = match[0]
    if (inString) {
      if (c === "\\") structural.lastIndex++
      else if (c === "\"") inString = false
    } else if (c === "\"") inString = true
    else if (c === "[" || c === "{") {
      if (++depth > max) return false
    } else if (c === "]" || c === "}") depth--
  }
  return true
}

/**
 * Reading a JSON body refuses one nested deeper than `maxJsonDepth`: JSON.parse takes thousands of
 * levels, but the schema's error message formats the value it refuses recursively and overflowed
 * the stack (a 500 found by the fuzz).
 */
const depthLimitedJson = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.tryMap(request.text, {
    try: (body) => {
      if (!nestsWithin(body, maxJsonDepth)) throw new NestedTooDeeply()
      return body === "" ? null : JSON.parse(body) as unknown
    },
    catch: (cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
  })

/**
 * No route takes multipart/form-data, and parsing a body as such waited forever for a body that was
 * empty (a hang found by the fuzz): reading one fails at once, after the route's access checks, and
 * Problems.ts answers 422.
 */
const refusal = () =>
  Effect.fail(new Multipart.MultipartError({ reason: "Parse", cause: "svc reads JSON bodies only" }))

/**
 * The body as text, read once. The platform's reader makes its effect with `Effect.runSync` of
 * `Effect.cached` (a fiber of its own per request) and reads through a scoped stream; every request
 * with a body paid for both. The same rules here: UTF-8, over `maxBytes` a "maxBytes exceeded"
 * RequestError (Problems.ts answers 413) and the stream destroyed, as when the request is
 * interrupted.
 */
const readText = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  Effect.async<string, HttpServerError.RequestError>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    let text = ""
    let bytes = 0
    const stop = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
    }
    const fail = (cause: unknown) => {
      stop()
      resume(Effect.fail(new HttpServerError.RequestError({ request, reason: "Decode", cause })))
    }
    const onData = (chunk: string) => {
      text += chunk
      bytes += Buffer.byteLength(chunk)
      if (bytes > maxBytes) {
        fail(new Error("maxBytes exceeded"))
        incoming.destroy()
      }
    }
    const onEnd = () => {
      stop()
      resume(Effect.succeed(text))
    }
    const onError = (error: Error) => fail(error)
    incoming.setEncoding("utf8")
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onError)
    return Effect.sync(() => {
      stop()
      if (!incoming.closed) incoming.destroy()
    })
  })

/** `effect`, run at most once: later runs answer its first exit. */
const once = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  let exit: Exit.Exit<A, E> | undefined
  return Effect.suspend(() =>
    exit ?? Effect.onExit(effect, (done) =>
      Effect.sync(() => {
        exit = done
      }))
  )
}

const textOf = Symbol("svc/kernel/http/BodyReaders/text")

type Guarded = HttpServerRequest.HttpServerRequest & { [textOf]?: Effect.Effect<string, HttpServerError.RequestError> }

/**
 * The readers of a request with a body (text, JSON, multipart) as above, given through its
 * prototype: one derived from its class's, made once per class. Defining the getters on each request
 * instead gave each its own hidden class: dearer per request, and slower reads of it after.
 */
export const bodyReaders = (maxBytes: number) => {
  const made = new WeakMap<object, { readonly json: object; readonly noMultipart: object }>()
  const derive = (base: object) => {
    const json = Object.create(base, {
      text: {
        configurable: true,
        get(this: Guarded) {
          return this[textOf] ??= once(readText(this, maxBytes))
        }
      },
      json: {
        configurable: true,
        get(this: HttpServerRequest.HttpServerRequest) {
          return depthLimitedJson(this)
        }
      }
    }) as object
    const noMultipart = Object.create(json, {
      multipart: { configurable: true, get: refusal },
      multipartStream: { configurable: true, get: () => Stream.fromEffect(refusal()) }
    }) as object
    return { json, noMultipart }
  }
  return (request: HttpServerRequest.HttpServerRequest, multipart: boolean) => {
    const base = Object.getPrototypeOf(request) as object
    let readers = made.get(base)
    if (readers === undefined) {
      readers = derive(base)
      made.set(base, readers)
    }
    Object.setPrototypeOf(request, multipart ? readers.noMultipart : readers.json)
  }
}
