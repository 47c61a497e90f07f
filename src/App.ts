/**
 * The whole service as layers: configuration -> database -> repositories -> services -> HTTP.
 * `ServicesLive` is what the CLI's offline commands (bootstrap) use; `AppLive` serves HTTP too.
 */
import { Layer } from "effect"
import { Agents } from "./agents/Agents.js"
import { AgentConversationsRepo } from "./agents/ConversationsRepo.js"
import { AgentEventsRepo } from "./agents/EventsRepo.js"
import * as Drivers from "./drivers/Drivers.js"
import type { MachineDriver } from "./drivers/MachineDriver.js"
import { Environments } from "./environments/Environments.js"
import { EnvironmentsRepo } from "./environments/Repo.js"
import { HttpLive, RoutesLive } from "./Http.js"
import { Accounts } from "./identity/Accounts.js"
import { ApiKeys } from "./identity/ApiKeys.js"
import { ApiKeysRepo } from "./identity/ApiKeysRepo.js"
import { EmailSignIn } from "./identity/EmailSignIn.js"
import { EmailSignInsRepo } from "./identity/EmailSignInsRepo.js"
import { Sessions } from "./identity/Sessions.js"
import { SessionsRepo } from "./identity/SessionsRepo.js"
import { UsersRepo } from "./identity/UsersRepo.js"
import { AppConfig } from "./kernel/config/AppConfig.js"
import { SecretBox } from "./kernel/crypto/SecretBox.js"
import { DomainEvents } from "./kernel/events/DomainEvents.js"
import { RateLimiter } from "./kernel/http/RateLimiter.js"
import * as Mail from "./kernel/mail/Mail.js"
import * as Database from "./kernel/sql/Database.js"
import { GroupCommit } from "./kernel/sql/GroupCommit.js"
import { IdempotencyKeysRepo } from "./kernel/sql/IdempotencyKeysRepo.js"
import { Limits } from "./limits/Limits.js"
import { Machines } from "./machines/Machines.js"
import * as StopTimers from "./machines/Worker.js"
import { OrganizationsRepo } from "./organizations/Repo.js"
import { PortTokens } from "./ports/PortTokens.js"
import { PortTokensRepo } from "./ports/Repo.js"
import * as HostCapacity from "./runtime/HostCapacity.js"
import * as Housekeeping from "./runtime/Housekeeping.js"
import { MachinesRepo } from "./runtime/MachinesRepo.js"
import * as MachineSupervisor from "./runtime/MachineSupervisor.js"
import { OperationsRepo } from "./runtime/OperationsRepo.js"
import { Snapshots } from "./snapshots/Snapshots.js"
import { SnapshotsRepo } from "./snapshots/store/SnapshotsRepo.js"
import { SnapshotWork } from "./snapshots/store/SnapshotWork.js"
import { Store } from "./snapshots/store/StoreLive.js"

const ReposLive = Layer.mergeAll(
  UsersRepo.layer,
  OrganizationsRepo.layer,
  ApiKeysRepo.layer,
  SessionsRepo.layer,
  EmailSignInsRepo.layer
).pipe(Layer.provideMerge(Database.layer))

/**
 * Identity and mail over the database the configuration names: what the CLI's offline commands
 * (bootstrap) need. It starts no workers, so it is safe to use while a server runs. Needs AppConfig.
 */
export const IdentityLive = EmailSignIn.layer.pipe(
  Layer.provideMerge(Accounts.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Sessions.layer, RateLimiter.layer, Mail.layer)),
  Layer.provideMerge(ReposLive)
)

/**
 * The machine runtime over `driver`: the event bus, the group commit and the supervisor whose
 * actors resume every open operation as soon as it is built. Only one process may build it per
 * data dir.
 */
export const machinesLive = <E, R>(driver: Layer.Layer<MachineDriver, E, R>) =>
  Layer.mergeAll(StopTimers.layer, Housekeeping.layer, Agents.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(Environments.layer, PortTokens.layer, Snapshots.layer)),
    Layer.provideMerge(Machines.layer),
    Layer.provideMerge(Layer.merge(MachineSupervisor.layer, Limits.layer)),
    Layer.provideMerge(SnapshotWork.layer),
    Layer.provideMerge(Store.layer),
    Layer.provideMerge(Layer.mergeAll(driver, DomainEvents.layer, GroupCommit.layer, HostCapacity.layer)),
    Layer.provideMerge(
      Layer.mergeAll(
        MachinesRepo.layer,
        OperationsRepo.layer,
        IdempotencyKeysRepo.layer,
        EnvironmentsRepo.layer,
        PortTokensRepo.layer,
        SnapshotsRepo.layer,
        SecretBox.layer,
        AgentConversationsRepo.layer,
        AgentEventsRepo.layer
      )
    ),
    Layer.provideMerge(Database.layer)
  )

/** Every domain service over `driver`, workers included. Needs AppConfig. */
export const servicesWith = <E, R>(driver: Layer.Layer<MachineDriver, E, R>) =>
  machinesLive(driver).pipe(Layer.provideMerge(IdentityLive))

/** Every domain service over the driver the configuration names: what the server runs. */
export const ServicesLive = servicesWith(Drivers.layer)

/** The service's routes over its services, for any HttpServer (tests use one on a free port). */
export const RoutesWithServices = RoutesLive.pipe(Layer.provide(ServicesLive))

/** The service listening where the configuration says. */
export const AppLive = (config: Layer.Layer<AppConfig, unknown>) =>
  HttpLive.pipe(Layer.provide(ServicesLive), Layer.provide(config))
