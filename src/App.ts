/**
 * The whole service as layers: the kernel over the database, the machine runtime over a driver,
 * then the product areas, each providing its own repositories privately (src/<area>/Live.ts).
 * Adding an area is one line in `AreasLive` (and its handlers in src/Http.ts).
 */
import { Effect, Layer } from "effect"
import { AgentsLive, OpenTurnsLive } from "./agents/Live.js"
import { alertRecorder, AlertsLive } from "./alerts/Live.js"
import { AccountsLive, BillingLive } from "./billing/Live.js"
import * as Drivers from "./drivers/Drivers.js"
import type { MachineDriver } from "./drivers/MachineDriver.js"
import { EnvironmentsLive, MachineEnvironmentsLive } from "./environments/Live.js"
import { HttpLive, RoutesLive } from "./Http.js"
import { IdentityLive as IdentityAreaLive, IdentitySweepLive } from "./identity/Live.js"
import { AuditLog } from "./kernel/AuditLog.js"
import type { AppConfig } from "./kernel/config/AppConfig.js"
import { SecretBox } from "./kernel/crypto/SecretBox.js"
import { DomainEvents } from "./kernel/events/DomainEvents.js"
import { EventRecorders } from "./kernel/events/EventRecorders.js"
import { OutboxMarks } from "./kernel/events/OutboxMarks.js"
import { Signals } from "./kernel/events/Signals.js"
import { RateLimiter } from "./kernel/http/RateLimiter.js"
import * as Mail from "./kernel/mail/Mail.js"
import { Gauges } from "./kernel/metrics/Gauges.js"
import * as Database from "./kernel/sql/Database.js"
import * as DataDirLock from "./kernel/sql/DataDirLock.js"
import { GroupCommit } from "./kernel/sql/GroupCommit.js"
import * as HostLease from "./kernel/sql/HostLease.js"
import { HostsRepo } from "./kernel/sql/HostsRepo.js"
import { IdempotencyKeysRepo } from "./kernel/sql/IdempotencyKeysRepo.js"
import * as IdempotencySweep from "./kernel/sql/IdempotencySweep.js"
import { Singletons } from "./kernel/sql/Singletons.js"
import { LimitsLive } from "./limits/Live.js"
import { MachinesLive } from "./machines/Live.js"
import { Metrics } from "./metrics/Metrics.js"
import { OperationsLive } from "./operations/Live.js"
import { OperatorLive, OperatorStandingLive } from "./operator/Live.js"
import { MembershipLive, OrganizationsLive } from "./organizations/Live.js"
import { PortsLive, PortsSweepLive } from "./ports/Live.js"
import { EngineReads } from "./runtime/EngineReads.js"
import * as HostCapacity from "./runtime/HostCapacity.js"
import { MachinesRepo } from "./runtime/MachinesRepo.js"
import * as MachineSupervisor from "./runtime/MachineSupervisor.js"
import { OpenOperationsLive, OperationsRepo } from "./runtime/OperationsRepo.js"
import { SnapshotWork } from "./runtime/SnapshotWork.js"
import { SnapshotsLive } from "./snapshots/Live.js"
import { SnapshotsRepo } from "./snapshots/store/SnapshotsRepo.js"
import { SnapshotStore } from "./snapshots/store/SnapshotStore.js"
import { TerminalsKernelLive, TerminalsLive } from "./terminals/Live.js"
import { webhookRecorder, WebhooksLive } from "./webhooks/Live.js"

/** The kernel's stores and ports over the database the configuration names. */
const KernelLive = Layer.mergeAll(
  EngineReads.layer.pipe(Layer.provideMerge(Layer.mergeAll(MachinesRepo.layer, OperationsRepo.layer))),
  SnapshotsRepo.layer,
  IdempotencyKeysRepo.layer,
  HostsRepo.layer,
  SecretBox.layer,
  Mail.layer,
  RateLimiter.layer,
  // Billing's accounts fill the Entitlements port (tiers, limits, the 402s of machine changes).
  AccountsLive,
  AuditLog.layer,
  Gauges.layer,
  OperatorStandingLive,
  // Terminal tickets and channels: what AccessRevocations ends (the terminals area fills it).
  // (OpenInvitations: OrganizationsLive.)
  TerminalsKernelLive
).pipe(Layer.provideMerge(Database.layer))

/**
 * Identity and organizations over the kernel (OrganizationsLive also fills the OpenInvitations port
 * that sign-up asks): what the CLI's offline commands (bootstrap) need. It
 * starts no workers, so it is safe to use while a server runs. Needs AppConfig.
 */
export const IdentityLive = IdentityAreaLive.pipe(
  Layer.provideMerge(OrganizationsLive),
  Layer.provideMerge(KernelLive)
)

/** The outbox recorders of the areas that keep one (src/kernel/events/EventRecorders.ts). */
const OutboxRecordersLive = Layer.effect(
  EventRecorders,
  Effect.map(Effect.all([webhookRecorder, alertRecorder]), EventRecorders.joining)
).pipe(Layer.provideMerge(OutboxMarks.layer))

/**
 * The machine runtime over `driver`: the event bus, the group commit and the supervisor whose
 * actors resume every open operation as soon as it is built. Only one process may build it per
 * data dir.
 */
const runtimeLive = <E, R>(driver: Layer.Layer<MachineDriver, E, R>) =>
  Layer.mergeAll(
    MachineSupervisor.layer,
    // Each owner sweeps its own rows; the idempotency keys' sweep asks the owners of open work.
    IdempotencySweep.layer.pipe(Layer.provide(Layer.mergeAll(OpenOperationsLive, OpenTurnsLive))),
    IdentitySweepLive,
    PortsSweepLive
  ).pipe(
    Layer.provideMerge(SnapshotWork.layer),
    Layer.provideMerge(SnapshotStore.layer),
    // The host's lease is taken before anything drives a machine (docs/scale-out.md).
    Layer.provideMerge(HostLease.layer),
    Layer.provideMerge(
      Layer.mergeAll(
        driver,
        DomainEvents.layer,
        GroupCommit.layer,
        // Once-only work and wake-ups across nodes (docs/scale-out.md): on SQLite, in process.
        Singletons.layer,
        Signals.layer,
        HostCapacity.layer,
        MachineEnvironmentsLive,
        OutboxRecordersLive
      )
    )
  )

/** The product areas on the runtime: each line may use the services of the lines below it. */
const AreasLive = TerminalsLive.pipe(
  Layer.provideMerge(Metrics.layer),
  Layer.provideMerge(OperatorLive),
  Layer.provideMerge(MembershipLive),
  Layer.provideMerge(AlertsLive),
  Layer.provideMerge(BillingLive),
  Layer.provideMerge(WebhooksLive),
  Layer.provideMerge(AgentsLive),
  Layer.provideMerge(SnapshotsLive),
  Layer.provideMerge(EnvironmentsLive),
  Layer.provideMerge(OperationsLive),
  Layer.provideMerge(MachinesLive),
  Layer.provideMerge(PortsLive),
  Layer.provideMerge(LimitsLive)
)

/**
 * Every domain service over `driver`, workers included. Needs AppConfig. The data dir's lock is
 * taken first: a second process on the same data dir stops before it opens anything.
 */
export const servicesWith = <E, R>(driver: Layer.Layer<MachineDriver, E, R>) =>
  AreasLive.pipe(
    Layer.provideMerge(runtimeLive(driver)),
    Layer.provideMerge(IdentityLive),
    Layer.provideMerge(DataDirLock.layer)
  )

/** Every domain service over the driver the configuration names: what the server runs. */
export const ServicesLive = servicesWith(Drivers.layer)

/** The service's routes over its services, for any HttpServer (tests use one on a free port). */
export const RoutesWithServices = RoutesLive.pipe(Layer.provide(ServicesLive))

/** The service listening where the configuration says. */
export const AppLive = (config: Layer.Layer<AppConfig, unknown>) =>
  Layer.merge(HttpLive, HostLease.exitOnLoss).pipe(Layer.provide(ServicesLive), Layer.provide(config))
