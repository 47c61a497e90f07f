/** Members and invitations: who belongs with which role; "Invite" and revoking for admins. */
import { del, get, post } from "../api.js"
import { useAction, useLoad } from "../hooks.js"
import type { Abilities } from "../roles.js"
import type { Invitation, Member } from "../types.js"
import { ErrorLine, when } from "../ui.js"

export const MembersView = ({ organization, can }: { organization: string; can: Abilities }) => {
  const base = `/v1/organizations/${organization}`
  const members = useLoad(() => get<{ items: ReadonlyArray<Member> }>(`${base}/members`), [organization])
  const invitations = useLoad(
    () =>
      can.administer
        ? get<{ items: ReadonlyArray<Invitation> }>(`${base}/invitations`)
        : Promise.resolve({ items: [] }),
    [organization, can.administer]
  )
  const action = useAction()
  const invite = (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    const data = new FormData(form)
    void action.run(async () => {
      await post(`${base}/invitations`, {
        email: String(data.get("email") ?? ""),
        role: String(data.get("role") ?? "member")
      })
      form.reset()
      await invitations.reload()
    })
  }
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      <ErrorLine error={members.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Role</th>
              <th scope="col">Running machines</th>
              <th scope="col">Joined</th>
            </tr>
          </thead>
          <tbody>
            {(members.data?.items ?? []).map((member) => (
              <tr key={member.user_id} aria-label={member.email}>
                <th scope="row">{member.email}</th>
                <td>{member.role}</td>
                <td>
                  {member.running_machines}
                  {member.max_running_machines === null ? "" : ` of ${member.max_running_machines}`}
                </td>
                <td>{when(member.joined_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!can.administer ? null : (
        <>
          <h2>Invitations</h2>
          <form class="card form" onSubmit={invite} aria-label="Invite">
            <label for="invite-email">Email address</label>
            <input id="invite-email" name="email" type="email" required autocomplete="off" />
            <label for="invite-role">Role</label>
            <select id="invite-role" name="role">
              <option value="member">member</option>
              <option value="operator">operator</option>
              <option value="billing">billing</option>
              <option value="admin">admin</option>
            </select>
            <button type="submit" disabled={action.busy}>Invite</button>
            <ErrorLine error={action.error ?? invitations.error} />
          </form>
          {(invitations.data?.items ?? []).length === 0 ?
            <p class="empty">No open invitations.</p> :
            (
              <ul class="plain" aria-label="Open invitations">
                {invitations.data!.items.map((invitation) => (
                  <li key={invitation.id}>
                    {invitation.email} <span class="muted">{invitation.role}, until {when(invitation.expires_at)}</span>
                    {" "}
                    <button
                      type="button"
                      class="secondary"
                      onClick={() =>
                        void action.run(async () => {
                          await del(`${base}/invitations/${invitation.id}`)
                          await invitations.reload()
                        })}
                    >
                      Revoke
                    </button>
                  </li>
                ))}
              </ul>
            )}
        </>
      )}
    </section>
  )
}
