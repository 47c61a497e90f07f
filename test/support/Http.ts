/** A small HTTP client over fetch for end-to-end tests: raw status, headers, body and a cookie jar. */
import { Effect } from "effect"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

export interface RequestOptions {
  readonly headers?: Record<string, string>
  readonly json?: unknown
  readonly body?: string
  readonly jar?: CookieJar
}

export class CookieJar {
  readonly cookies = new Map<string, string>()
  take(headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";")
      const [name, ...value] = pair!.split("=")
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))
      if (expired) this.cookies.delete(name!.trim())
      else this.cookies.set(name!.trim(), value.join("=").trim())
    }
  }
  header() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
  }
  get(name: string) {
    return this.cookies.get(name)
  }
}

export const request = (base: string, method: string, path: string, options: RequestOptions = {}) =>
  Effect.promise(async (): Promise<Reply> => {
    const headers: Record<string, string> = { ...options.headers }
    let body: string | undefined = options.body
    if (options.json !== undefined) {
      body = JSON.stringify(options.json)
      headers["content-type"] ??= "application/json"
    }
    if (options.jar !== undefined && options.jar.cookies.size > 0) headers["cookie"] = options.jar.header()
    const response = await fetch(base + path, { method, headers, body: body ?? null, redirect: "manual" })
    options.jar?.take(response.headers)
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    return { status: response.status, headers: response.headers, text, body: parsed }
  })

/** A client bound to one server, optionally with a bearer key or a cookie jar. */
export const client =
  (base: string, defaults: { key?: string; jar?: CookieJar; headers?: Record<string, string> } = {}) =>
  (method: string, path: string, options: RequestOptions = {}) =>
    request(base, method, path, {
      ...options,
      ...(defaults.jar !== undefined ? { jar: defaults.jar } : {}),
      headers: {
        ...(defaults.key !== undefined ? { authorization: `Bearer ${defaults.key}` } : {}),
        ...defaults.headers,
        ...options.headers
      }
    })
