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

/** The port proxy's address of a machine's port. */
export const portUrl = (baseUrl: string, machineId: string, port: number) =>
  `${baseUrl}/v1/machines/${machineId}/ports/${port}/http/`
