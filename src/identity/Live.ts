/** The identity area: sign-in, sessions, accounts and API keys over their repositories (provided here only). */
import { Layer } from "effect"
import { Accounts } from "./Accounts.js"
import { ApiKeys } from "./ApiKeys.js"
import { ApiKeysRepo } from "./ApiKeysRepo.js"
import { EmailSignIn } from "./EmailSignIn.js"
import { EmailSignInsRepo } from "./EmailSignInsRepo.js"
import { Sessions } from "./Sessions.js"
import { SessionsRepo } from "./SessionsRepo.js"
import { UsersRepo } from "./UsersRepo.js"

export const IdentityLive = EmailSignIn.layer.pipe(
  Layer.provideMerge(Accounts.layer),
  Layer.provideMerge(Layer.mergeAll(ApiKeys.layer, Sessions.layer)),
  Layer.provide(Layer.mergeAll(UsersRepo.layer, SessionsRepo.layer, EmailSignInsRepo.layer, ApiKeysRepo.layer))
)
