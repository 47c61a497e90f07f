#!/usr/bin/env node
// docs/roles.md, made from the role table (test/api/roleTable.ts) that test/e2e/roles.test.ts holds
// the server to: `npm run roles-doc`. test/api/roles.test.ts checks the committed page is current.
const { register } = await import("tsx/esm/api")
register()
const { isOutside, roleNames, roleSections } = await import(new URL("../test/api/roleTable.ts", import.meta.url).href)

const intro = `# Roles, route by route

<!-- Made by bin/roles-doc.mjs from test/api/roleTable.ts (npm run roles-doc); do not edit by hand. -->

Every member of an organization has one role: \`owner\`, \`admin\`, \`operator\`, \`billing\` or
\`member\` (docs/organizations.md says what each is for). Each route that acts in an organization
names the roles it allows, in one declaration (src/kernel/http/Policy.ts); a member whose role is
not among them gets **403 \`forbidden\`**, whose detail names the roles the route allows. The
OpenAPI document carries the same list on each operation (\`x-svc-roles\`, and a **Roles** sentence
in its description; see [docs/api.md](api.md#svc-api-reference)).

- The role is the member's role **at the moment of the request**, with a browser session and with
  an API key alike: a key acts with its creator's current role, so demoting a member shrinks their
  keys at once, and removing them revokes their keys. A key's preset (access code) is checked
  besides the role: a key never does more than both allow.
- Demoting a member below \`owner\`, \`admin\` and \`operator\` also ends their terminal tickets and
  closes their open terminals, since they may no longer open one.
- The organization of a request is checked the same way on every organization-scoped route,
  including those naming it in the path (\`/v1/organizations/{organization_id}/...\`): an API key
  fixes its organization, and an \`X-Organization-ID\` header naming another one answers 403
  \`organization_mismatch\`; a browser session sends \`X-Organization-ID\` on every such request
  (the published rule for sessions on organization-scoped routes), and on a path-scoped route it must
  name the organization in the path (else 403 \`organization_mismatch\`; left out, 422).
- Removing a member (\`DELETE .../members/{user_id}\`) is open to every member for themselves;
  removing someone else is for owners and admins, and only owners remove an owner (a rule on the
  target, checked by the members service). Changing a member follows the same target rules.
`

const mark = (allowed) => (allowed ? "yes" : "-")

const section = ({ area, routes }) => {
  const entries = Object.entries(routes)
  const scoped = entries.filter(([, roles]) => !isOutside(roles))
  const outside = entries.filter(([, roles]) => isOutside(roles))
  const lines = [`## ${area}`, ""]
  if (scoped.length > 0) {
    lines.push(`| Route | ${roleNames.map((role) => `\`${role}\``).join(" | ")} |`)
    lines.push(`| --- | ${roleNames.map(() => ":-:").join(" | ")} |`)
    for (const [route, roles] of scoped) {
      lines.push(`| \`${route}\` | ${roleNames.map((role) => mark(roles.includes(role))).join(" | ")} |`)
    }
    lines.push("")
  }
  if (outside.length > 0) {
    if (scoped.length > 0) lines.push("Outside any organization (no role applies):", "")
    lines.push("| Route | Who may call it |", "| --- | --- |")
    for (const [route, { who }] of outside) lines.push(`| \`${route}\` | ${who} |`)
    lines.push("")
  }
  return lines.join("\n")
}

process.stdout.write([intro, ...roleSections.map(section)].join("\n"))
