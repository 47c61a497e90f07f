/**
 * A machine's exposed ports (extensions.md §5), kept on the machine row as a JSON array. Pure
 * functions over that list, shared by the operation that changes it and the DTO that shows it.
 */
export interface ExposedPort {
  readonly port: number
  readonly public: boolean
}

export const parsePorts = (json: string): ReadonlyArray<ExposedPort> => JSON.parse(json) as Array<ExposedPort>

/** Sorted by port, so the stored text (and so "unchanged") does not depend on the order of changes. */
export const portsJson = (ports: ReadonlyArray<ExposedPort>): string =>
  JSON.stringify([...ports].sort((a, b) => a.port - b.port).map((p) => ({ port: p.port, public: p.public })))

/** The list with `port` exposed as asked (replacing its visibility if it was exposed already). */
export const withPort = (ports: ReadonlyArray<ExposedPort>, port: ExposedPort): ReadonlyArray<ExposedPort> => [
  ...ports.filter((p) => p.port !== port.port),
  port
]

export const withoutPort = (ports: ReadonlyArray<ExposedPort>, port: number): ReadonlyArray<ExposedPort> =>
  ports.filter((p) => p.port !== port)

export const findPort = (ports: ReadonlyArray<ExposedPort>, port: number): ExposedPort | undefined =>
  ports.find((p) => p.port === port)

/**
 * The port proxy's address of a machine's port: on the origin of its own that `SVC_PORTS_URL`
 * names when set, else under the base URL.
 */
export const portUrl = (
  config: { readonly baseUrl: string; readonly portsUrl?: string | undefined },
  machineId: string,
  port: number
) =>
  config.portsUrl === undefined
    ? `${config.baseUrl}/v1/machines/${machineId}/ports/${port}/http/`
    : `${config.portsUrl.replace("{port}", String(port)).replace("{machine}", machineId)}/`

/**
 * Checks an `SVC_PORTS_URL` template: http or https, `{port}` and `{machine}` once each in the host
 * name (a wildcard DNS name), nothing after the host. Answers what is wrong, or undefined.
 */
export const portsUrlProblem = (template: string): string | undefined => {
  const match = /^(https?):\/\/([^/?#]+)\/?$/.exec(template)
  if (match === null) {
    return "expected http(s)://HOST with nothing after the host, e.g. https://{port}-{machine}.ports.example.com"
  }
  const authority = match[2]!
  const hostName = authority.replace(/:\d{1,5}$/, "")
  const once = (part: string) => hostName.split(part).length === 2
  if (!once("{port}") || !once("{machine}")) return "the host name must hold {port} and {machine} once each"
  const sample = hostName.replace("{port}", "65535").replace("{machine}", "00000000-0000-4000-8000-000000000000")
  if (!/^[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63})*$/i.test(sample) || /[{}]/.test(sample)) {
    return "the host name must be a DNS name whose {port}-{machine} label fits in 63 characters"
  }
  return undefined
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * What a request's Host header names under an `SVC_PORTS_URL` template: the machine and port, or
 * undefined for any other host (svc's own).
 */
export const portHostMatcher = (template: string) => {
  const authority = /^https?:\/\/([^/?#]+)/.exec(template)![1]!.toLowerCase()
  const pattern = new RegExp(
    `^${
      escaped(authority)
        .replace(escaped("{port}"), "(\\d{1,5})")
        .replace(escaped("{machine}"), "([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
    }$`
  )
  const portFirst = authority.indexOf("{port}") < authority.indexOf("{machine}")
  return (host: string | undefined): { readonly machineId: string; readonly port: number } | undefined => {
    const match = pattern.exec((host ?? "").toLowerCase())
    if (match === null) return undefined
    const port = Number(portFirst ? match[1] : match[2])
    if (port < 1 || port > 65535) return undefined
    return { machineId: (portFirst ? match[2] : match[1])!, port }
  }
}
