/**
 * Every setting of extensions.md §1, read through Effect `Config` from the environment (or from the
 * `svc serve` flags layered over it). A malformed value fails with a ConfigError that names the
 * variable; the CLI prints it as one line and stops.
 */
import { Config, ConfigError, Context, Effect, Either, Layer, Option, Redacted } from "effect"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { parseCidr } from "../domain/Cidr.js"
import { portsUrlProblem } from "../domain/Ports.js"
import { useDataDir } from "../sql/NativeAddon.js"
import {
  limitsSetting,
  type Prices,
  pricesSetting,
  stripeSetting,
  type StripeSettings,
  type Tier,
  type TierLimits
} from "./BillingSettings.js"
import { sizesSetting, type SizeTable } from "./MachineSizes.js"
import { bad, ok, type Parsed } from "./Parsing.js"
import {
  database,
  defaultHostId,
  extraCaCerts,
  hostIdSetting,
  type MailSetting,
  mailSetting,
  type OidcProviderConfig,
  oidcProviders,
  type SecretKeysSetting,
  secretKeysSetting
} from "./Readers.js"

export * from "./BillingSettings.js"
export * from "./Readers.js"

export type Runtime = "sandbox" | "docker" | "process"

export interface AppConfigShape {
  readonly host: string
  readonly port: number
  readonly baseUrl: string
  readonly uiUrl: string
  readonly dataDir: string
  readonly databaseFile: string
  /** `SVC_DATABASE_URL=postgres://...`: a PostgreSQL database instead of the file (extensions.md §21). */
  readonly postgresUrl?: string | undefined
  readonly runtime: Runtime
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  readonly secretKeys: SecretKeysSetting
  readonly mail: MailSetting
  /** `SVC_MAIL_FROM`; unset means `svc@<host of the base URL>`. */
  readonly mailFrom: string | undefined
  readonly oidcProviders: ReadonlyArray<OidcProviderConfig>
  /** `SVC_SIGNUP`: who may create an account (an address with an open invitation always may). */
  readonly signup: "open" | "invite_only"
  /** `SVC_WAITLIST_URL`: where the sign-in page sends people who may not sign up; unset: nowhere. */
  readonly waitlistUrl?: string | undefined
  readonly payments: Option.Option<"stripe">
  readonly billing: "metered" | "unlimited"
  /** `SVC_METER_SECONDS`: how often running time is metered (also at every stop). Absent: 60. */
  readonly meterSeconds?: number | undefined
  /** `SVC_PRICES` merged over the defaults of docs/billing.md. Absent: the defaults. */
  readonly prices?: Prices | undefined
  /** `SVC_TRIAL_CARD_CHECK`: trial organizations verify a card before they boot (with payments). */
  readonly trialCardCheck?: boolean | undefined
  /** Stripe's settings when `SVC_PAYMENTS=stripe`. */
  readonly stripe?: StripeSettings | undefined
  readonly webhookAllowPrivate: boolean
  readonly logLevel: string
  /** Largest request body accepted; larger answers 413 `body_too_large`. */
  readonly maxBodyBytes: number
  readonly limits: Readonly<Record<Tier, TierLimits>>
  /** The host's capacity and start queue (src/runtime/HostCapacity.ts). */
  readonly capacity: HostCapacitySetting
  /** Snapshot and template limits (docs/snapshots.md); the defaults when absent. */
  readonly snapshots?: SnapshotSettings | undefined
  /** `SVC_AGENTS_DIR`: the agents' tools folder (`svc agents install`); unset: `<data dir>/tools/agents`. */
  readonly agentsDir?: string | undefined
  /**
   * What sandbox machines with internet access may reach besides the internet (docs/drivers.md
   * "Network"): `SVC_MACHINE_LAN` private ranges, `SVC_MACHINE_HOST_PORTS` these host loopback
   * ports at 10.0.2.2. Absent: neither.
   */
  readonly machineNetwork?: { readonly lan: boolean; readonly hostPorts: ReadonlyArray<number> } | undefined
  /**
   * `SVC_DELETED_ORG_RETENTION_DAYS`: how long a deleted organization's stopped machines, disks and
   * snapshots are kept before they are deleted; absent: `defaultDeletedOrganizationRetentionDays`.
   */
  readonly deletedOrganizationRetentionDays?: number | undefined
  /** The abuse guard (docs/operators.md); the defaults when absent. */
  readonly abuse?: AbuseGuardSettings | undefined
  /** `SVC_SIZES` merged over the machine sizes (MachineSizes.ts); the defaults when absent. */
  readonly sizes?: SizeTable | undefined
  /** `SVC_PORTS_URL`: the template of machine ports' own origins (`{port}`, `{machine}`); absent: under the base URL. */
  readonly portsUrl?: string | undefined
  /** `SVC_TRUSTED_PROXIES`: the CIDRs whose X-Forwarded-For and -Proto svc believes; absent: none. */
  readonly trustedProxies?: ReadonlyArray<string> | undefined
  /**
   * How long a file read or write may take (src/runtime/FileTransfers.ts). No variable sets it:
   * tests shorten it. Absent: `defaultFileOperationSeconds` (60).
   */
  readonly fileOperationSeconds?: number | undefined
  /**
   * `SVC_EXTRA_CA_CERTS`: the certificates (PEM, one each) of the file it names, trusted by every
   * outbound TLS client besides Node's defaults (src/kernel/tls/TrustedCas.ts). Absent: none.
   */
  readonly extraCaCerts?: ReadonlyArray<string> | undefined
  /** `SVC_HOST_ID`: this node's host (docs/scale-out.md); absent: `defaultHostId()`. */
  readonly hostId?: string | undefined
  /** `SVC_INTERNAL_URL`: where the other nodes reach this one; absent: the base URL. */
  readonly internalUrl?: string | undefined
  /** `SVC_HOST_CAPACITY`: machines this host may run at once for placement; absent: unlimited. */
  readonly hostCapacity?: number | undefined
}

/** The node's host settings, with their defaults (tests build configurations without them). */
export const hostSettingsOf = (
  config: Pick<AppConfigShape, "hostId" | "internalUrl" | "hostCapacity" | "baseUrl">
) => ({
  hostId: config.hostId ?? defaultHostId(),
  internalUrl: config.internalUrl ?? config.baseUrl,
  capacity: config.hostCapacity ?? null
})

export interface AbuseGuardSettings {
  /** `SVC_ABUSE_GUARD`: whose machines are watched: trial organizations, all, or none. */
  readonly scope: "trial" | "all" | "off"
  /** `SVC_ABUSE_SAMPLE_SECONDS`: how often each running machine's CPU time is read. */
  readonly sampleSeconds: number
  /** `SVC_ABUSE_CPU_PERMILLE`: the use, in thousandths of the size's CPUs, that counts as sustained. */
  readonly cpuPermille: number
  /** `SVC_ABUSE_WINDOW_SECONDS`: how long the use must last for the machine to be stopped. */
  readonly windowSeconds: number
}

export const defaultAbuseGuard: AbuseGuardSettings = {
  scope: "trial",
  sampleSeconds: 30,
  cpuPermille: 900,
  windowSeconds: 900
}

export const defaultDeletedOrganizationRetentionDays = 30

export interface SnapshotSettings {
  /** Snapshots one machine may hold (ready and pending, templates apart); more: `snapshot_limit_reached`. */
  readonly perMachine: number
  /** Templates one organization may hold; more: `template_limit_reached`. */
  readonly templatesPerOrganization: number
}

export const defaultSnapshotSettings: SnapshotSettings = { perMachine: 50, templatesPerOrganization: 100 }

export const agentsDirOf = (config: Pick<AppConfigShape, "agentsDir" | "dataDir">) =>
  config.agentsDir ?? NodePath.join(config.dataDir, "tools", "agents")

export interface HostCapacitySetting {
  /** Machines this host runs at once, across every organization; more boots wait in the start queue. */
  readonly maxRunning: number
  /** How long a boot may wait in the start queue before it fails with `no_capacity`. */
  readonly queueSeconds: number
}

/**
 * An idle sandbox holds a few MiB; a machine's size is a ceiling, not a reservation. 64 MiB of host
 * memory per running machine leaves room for the ones that work (docs/configuration.md).
 */
export const defaultHostCapacity = (): HostCapacitySetting => ({
  maxRunning: Math.max(16, Math.floor(NodeOs.totalmem() / (64 * 1024 ** 2))),
  queueSeconds: 600
})

export class AppConfig extends Context.Tag("svc/AppConfig")<AppConfig, AppConfigShape>() {}

/** A checkout runs its sources or its own bundle (dist/); an installed package lives in node_modules. */
const runsFromCheckout = !fileURLToPath(import.meta.url).split(NodePath.sep).includes("node_modules")

/** SVC_DATA_DIR when unset: `.svc-data` in a checkout, else the user's data folder. */
export const defaultDataDir = () =>
  runsFromCheckout
    ? NodePath.resolve(".svc-data")
    : NodePath.join(process.env.XDG_DATA_HOME ?? NodePath.join(NodeOs.homedir(), ".local", "share"), "svc")

const load = Effect.gen(function*() {
  const host = yield* Config.string("SVC_HOST").pipe(Config.withDefault("127.0.0.1"))
  const port = yield* Config.port("SVC_PORT").pipe(Config.withDefault(8080))
  const baseUrl = (yield* Config.url("SVC_BASE_URL").pipe(Config.option)).pipe(
    Option.map((url) => url.toString().replace(/\/$/, "")),
    Option.getOrElse(() => `http://${host.includes(":") ? `[${host}]` : host}:${port}`)
  )
  const uiUrl = (yield* Config.url("SVC_UI_URL").pipe(Config.option)).pipe(
    Option.map((url) => url.toString().replace(/\/$/, "")),
    Option.getOrElse(() => baseUrl)
  )
  const dataDir = NodePath.resolve(yield* Config.string("SVC_DATA_DIR").pipe(Config.withDefault(defaultDataDir())))
  // The single executable's SQLite addon is cached under it (a home folder may be read-only).
  useDataDir(dataDir)
  const { file: databaseFile, postgresUrl } = yield* database(dataDir)
  const secretKeys = yield* secretKeysSetting
  // Every node must read what another sealed (extensions.md §21): the keys cannot be one node's own.
  if (postgresUrl !== undefined && secretKeys.kind !== "given") {
    return yield* Effect.fail(ConfigError.InvalidData(
      ["SVC_SECRET_KEYS"],
      "PostgreSQL needs SVC_SECRET_KEYS set, the same on every node"
    ))
  }
  return AppConfig.of({
    host,
    port,
    baseUrl,
    hostId: yield* hostIdSetting,
    internalUrl: (yield* Config.url("SVC_INTERNAL_URL").pipe(Config.option)).pipe(
      Option.map((url) => url.toString().replace(/\/$/, "")),
      Option.getOrElse(() => baseUrl)
    ),
    hostCapacity: Option.getOrUndefined(
      yield* Config.integer("SVC_HOST_CAPACITY").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.option
      )
    ),
    uiUrl,
    dataDir,
    databaseFile,
    postgresUrl,
    runtime: yield* Config.literal("sandbox", "docker", "process")("SVC_RUNTIME").pipe(Config.withDefault("sandbox")),
    operatorToken: yield* Config.redacted("SVC_OPERATOR_TOKEN").pipe(Config.option),
    secretKeys,
    mail: yield* mailSetting(dataDir),
    mailFrom: Option.getOrUndefined(yield* Config.string("SVC_MAIL_FROM").pipe(Config.option)),
    oidcProviders: yield* oidcProviders,
    signup: yield* Config.literal("open", "invite_only")("SVC_SIGNUP").pipe(Config.withDefault("invite_only")),
    waitlistUrl: Option.getOrUndefined(
      Option.map(yield* Config.url("SVC_WAITLIST_URL").pipe(Config.option), (url) => url.toString())
    ),
    payments: yield* Config.literal("stripe")("SVC_PAYMENTS").pipe(Config.option),
    billing: yield* Config.literal("metered", "unlimited")("SVC_BILLING").pipe(Config.withDefault("unlimited")),
    meterSeconds: yield* Config.integer("SVC_METER_SECONDS").pipe(
      Config.validate({ message: "must be between 1 and 3600", validation: (n) => n >= 1 && n <= 3600 }),
      Config.withDefault(60)
    ),
    prices: yield* pricesSetting,
    trialCardCheck: yield* Config.boolean("SVC_TRIAL_CARD_CHECK").pipe(Config.withDefault(false)),
    stripe: yield* stripeSetting,
    webhookAllowPrivate: yield* Config.boolean("SVC_WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault(false)),
    extraCaCerts: yield* extraCaCerts,
    logLevel: yield* Config.literal("all", "trace", "debug", "info", "warning", "error", "fatal", "none")(
      "SVC_LOG_LEVEL"
    ).pipe(Config.withDefault("info")),
    maxBodyBytes: yield* Config.integer("SVC_MAX_BODY_BYTES").pipe(
      Config.validate({ message: "must be at least 1024", validation: (n) => n >= 1024 }),
      Config.withDefault(24 * 1024 * 1024)
    ),
    limits: yield* limitsSetting,
    sizes: yield* sizesSetting,
    capacity: {
      maxRunning: yield* Config.integer("SVC_HOST_MAX_RUNNING").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultHostCapacity().maxRunning)
      ),
      queueSeconds: yield* Config.integer("SVC_START_QUEUE_SECONDS").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultHostCapacity().queueSeconds)
      )
    },
    snapshots: {
      perMachine: yield* Config.integer("SVC_SNAPSHOTS_PER_MACHINE").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultSnapshotSettings.perMachine)
      ),
      templatesPerOrganization: yield* Config.integer("SVC_TEMPLATES_PER_ORGANIZATION").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultSnapshotSettings.templatesPerOrganization)
      )
    },
    deletedOrganizationRetentionDays: yield* Config.integer("SVC_DELETED_ORG_RETENTION_DAYS").pipe(
      Config.validate({ message: "must be 0 or more", validation: (n) => n >= 0 }),
      Config.withDefault(defaultDeletedOrganizationRetentionDays)
    ),
    abuse: {
      scope: yield* Config.literal("trial", "all", "off")("SVC_ABUSE_GUARD").pipe(
        Config.withDefault(defaultAbuseGuard.scope)
      ),
      sampleSeconds: yield* Config.integer("SVC_ABUSE_SAMPLE_SECONDS").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultAbuseGuard.sampleSeconds)
      ),
      cpuPermille: yield* Config.integer("SVC_ABUSE_CPU_PERMILLE").pipe(
        Config.validate({ message: "must be between 1 and 1000", validation: (n) => n >= 1 && n <= 1000 }),
        Config.withDefault(defaultAbuseGuard.cpuPermille)
      ),
      windowSeconds: yield* Config.integer("SVC_ABUSE_WINDOW_SECONDS").pipe(
        Config.validate({ message: "must be 0 (drained) or more", validation: (n) => n >= 0 }),
        Config.withDefault(defaultAbuseGuard.windowSeconds)
      )
    },
    agentsDir: Option.getOrUndefined(
      Option.map(yield* Config.string("SVC_AGENTS_DIR").pipe(Config.option), (dir) => NodePath.resolve(dir))
    ),
    machineNetwork: {
      lan: yield* Config.boolean("SVC_MACHINE_LAN").pipe(Config.withDefault(false)),
      hostPorts: yield* Config.string("SVC_MACHINE_HOST_PORTS").pipe(
        Config.withDefault(""),
        Config.mapOrFail((value): Parsed<ReadonlyArray<number>> => {
          const ports = value.split(",").map((part) => part.trim()).filter((part) => part !== "").map(Number)
          return ports.every((port) => Number.isInteger(port) && port >= 1 && port <= 65535)
            ? Either.right(ports)
            : bad("SVC_MACHINE_HOST_PORTS", "expected TCP ports separated by commas, e.g. 11434,8000")
        })
      )
    },
    portsUrl: Option.getOrUndefined(
      yield* Config.string("SVC_PORTS_URL").pipe(
        Config.mapOrFail((value): Parsed<string> => {
          const problem = portsUrlProblem(value.trim())
          return problem === undefined ? ok(value.trim().replace(/\/$/, "")) : bad("SVC_PORTS_URL", problem)
        }),
        Config.option
      )
    ),
    trustedProxies: yield* Config.string("SVC_TRUSTED_PROXIES").pipe(
      Config.withDefault(""),
      Config.mapOrFail((value): Parsed<ReadonlyArray<string>> => {
        const cidrs = value.split(",").map((part) => part.trim()).filter((part) => part !== "")
        const wrong = cidrs.find((cidr) => parseCidr(cidr) === undefined)
        return wrong === undefined
          ? ok(cidrs)
          : bad("SVC_TRUSTED_PROXIES", `"${wrong}" is not a CIDR; expected e.g. 127.0.0.1/32,10.0.0.0/8,::1/128`)
      })
    )
  })
})

export const layer = Layer.effect(AppConfig, load)
