/**
 * Organizations and their members: who belongs where with which role. Identity creates a user's
 * first organization through this service; the count limits read a member's own machine cap here.
 */
import { Context, Effect, Layer } from "effect"
import { EngineReads } from "../runtime/EngineReads.js"
import { OrganizationsRepo } from "./Repo.js"

const make = Effect.gen(function*() {
  const repo = yield* OrganizationsRepo
  const { machines } = yield* EngineReads
  return {
    findById: repo.findById,
    createWithOwner: repo.createWithOwner,
    membership: repo.membership,
    organizationsOf: repo.organizationsOf,
    ownedBy: repo.ownedBy,
    /** The members, oldest first, with how many machines each runs now (their addresses: Members.list). */
    members: (organizationId: string) =>
      Effect.gen(function*() {
        const members = yield* repo.members(organizationId)
        const running = yield* machines.runningByMember(organizationId)
        return members.map((member) => ({ ...member, running_machines: running.get(member.user_id) ?? 0 }))
      })
  }
})

export class Organizations extends Context.Tag("svc/organizations/Organizations")<
  Organizations,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(Organizations, make)
}
