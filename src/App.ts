/**
 * The whole service as layers: configuration -> database -> repositories -> services -> HTTP.
 * `ServicesLive` is what the CLI's offline commands (bootstrap) use; `AppLive` serves HTTP too.
 */
import { Layer } from "effect"
import { AppConfig } from "./config/AppConfig.js"
import { HttpLive, RoutesLive } from "./http/Server.js"
import * as Mail from "./mail/Mail.js"
import { ApiKeysRepo } from "./persistence/ApiKeysRepo.js"
import * as Database from "./persistence/Database.js"
import { EmailSignInsRepo } from "./persistence/EmailSignInsRepo.js"
import { OrganizationsRepo } from "./persistence/OrganizationsRepo.js"
import { SessionsRepo } from "./persistence/SessionsRepo.js"
import { UsersRepo } from "./persistence/UsersRepo.js"
import { Accounts } from "./services/Accounts.js"
import { ApiKeys } from "./services/ApiKeys.js"
import { EmailSignIn } from "./services/EmailSignIn.js"
import { RateLimiter } from "./services/RateLimiter.js"
import { Sessions } from "./services/Sessions.js"

const ReposLive = Layer.mergeAll(
  UsersRepo.layer,
  OrganizationsRepo.layer,
  ApiKeysRepo.layer,
  SessionsRepo.layer,
  EmailSignInsRepo.layer
).pipe(Layer.provide(Database.layer))

/** Every domain service, over the database the configuration names. Needs AppConfig. */
export const ServicesLive = EmailSignIn.layer.pipe(
  Layer.provideMerge(Accounts.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Sessions.layer, RateLimiter.layer, Mail.layer)),
  Layer.provideMerge(ReposLive)
)

/** The service's routes over its services, for any HttpServer (tests use one on a free port). */
export const RoutesWithServices = RoutesLive.pipe(Layer.provide(ServicesLive))

/** The service listening where the configuration says. */
export const AppLive = (config: Layer.Layer<AppConfig, unknown>) =>
  HttpLive.pipe(Layer.provide(ServicesLive), Layer.provide(config))
