/**
 * `svc whoami` and `svc members list`. Changing a member's role, removing a member and invitations
 * are session-only routes (api.md access S: a key is refused with `session_required`), so they are
 * done in the console (docs/console.md), not here.
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import type { MemberDto } from "../organizations/Api.js"
import { connect } from "./Connect.js"
import { CommandFailed } from "./Failure.js"
import { type Column, json, printJson, printList, stdout, time } from "./Output.js"

type Member = typeof MemberDto.Type

const columns: ReadonlyArray<Column<Member>> = [
  { header: "email", value: (m) => m.email },
  { header: "user id", value: (m) => m.user_id },
  { header: "role", value: (m) => m.role },
  { header: "running", value: (m) => m.running_machines },
  { header: "cap", value: (m) => m.max_running_machines },
  { header: "joined", value: (m) => time(m.joined_at) }
]

/** The organization the key belongs to. */
const keyOrganization = Effect.gen(function*() {
  const { client } = yield* connect
  const me = yield* client.members.me()
  const organization = me.credential.organization_id ?? me.active_organization_id
  if (organization === null) return yield* new CommandFailed({ message: "this credential names no organization" })
  return { client, me, organization }
})

const list = Command.make("list", { json }, (flags) =>
  Effect.gen(function*() {
    const { client, organization } = yield* keyOrganization
    const members = yield* client.members.list({ path: { organization_id: organization } })
    yield* printList(flags.json, members.items, columns)
  })).pipe(Command.withDescription("List the organization's members, their roles and running machines"))

export const members = Command.make("members").pipe(
  Command.withDescription("Members of the organization (roles and invitations: the console's Members view)"),
  Command.withSubcommands([list])
)

export const whoami = Command.make("whoami", { json }, (flags) =>
  Effect.gen(function*() {
    const { me, organization } = yield* keyOrganization
    if (flags.json) return yield* printJson(me)
    const org = me.organizations.find((o) => o.id === organization)
    yield* stdout(
      `${me.user.email} (${me.user.id})\n` +
        `organization ${org?.name ?? "?"} (${organization}), role ${org?.role ?? "?"}\n` +
        `credential ${me.credential.kind}${me.credential.preset === null ? "" : ` ${me.credential.preset}`}\n`
    )
  })).pipe(Command.withDescription("Show the signed-in user, organization, role and key preset"))
