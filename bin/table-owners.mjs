// One owner per table (docs/architecture.md "Tables and their owners"), run by `npm run lint`:
// every table and view the migrations create has one owner in schema/table-owners.json, and a
// source file under src/ names a table in its SQL (string and template literals, and the first
// argument of Prepared's insert/updateById) only if it lies under that table's owner. Other areas
// ask the owner's service. The map's "exceptions" are the cross-reads still to remove: the check
// also fails on an exception that is no longer needed, so the list only shrinks.
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import ts from "typescript"

const root = NodePath.resolve(import.meta.dirname, "..")
const map = JSON.parse(NodeFs.readFileSync(NodePath.join(root, "schema/table-owners.json"), "utf8"))
const problems = []

// The tables and views the migrations leave, in order (created, renamed, dropped), and those made
// elsewhere (the Migrator's own, temporary tables).
const tables = new Set()
const migrations = NodePath.join(root, "schema/migrations")
for (const file of NodeFs.readdirSync(migrations).filter((name) => name.endsWith(".sql")).sort()) {
  const text = NodeFs.readFileSync(NodePath.join(migrations, file), "utf8").replace(/--.*$/gm, "")
  const statement =
    /\b(CREATE\s+(?:TABLE|VIEW)(?:\s+IF\s+NOT\s+EXISTS)?|DROP\s+(?:TABLE|VIEW)(?:\s+IF\s+EXISTS)?|ALTER\s+TABLE)\s+"?(\w+)"?(?:\s+RENAME\s+TO\s+"?(\w+))?/gi
  for (const [, verb, name, renamed] of text.matchAll(statement)) {
    if (/^CREATE/i.test(verb)) tables.add(name)
    else if (/^DROP/i.test(verb)) tables.delete(name)
    else if (renamed) {
      tables.delete(name)
      tables.add(renamed)
    }
  }
}
for (const table of map.outsideMigrations) tables.add(table)

const ownerOf = new Map()
for (const [owner, owned] of Object.entries(map.owners)) {
  for (const table of owned) {
    if (ownerOf.has(table)) problems.push(`${table}: owned twice (${ownerOf.get(table)} and ${owner})`)
    ownerOf.set(table, owner)
    if (!tables.has(table)) problems.push(`${table}: in schema/table-owners.json but no migration creates it`)
  }
}
for (const table of tables) if (!ownerOf.has(table)) problems.push(`${table}: no owner in schema/table-owners.json`)

// The literal texts of a file: strings, templates (their fixed parts), and what Prepared writes.
const literalTexts = (file) => {
  const source = ts.createSourceFile(file, NodeFs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const texts = []
  const visit = (node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) texts.push(node.text)
    else if (ts.isTemplateExpression(node)) {
      texts.push([node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(" ? "))
    }
    if (
      ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) &&
      ["insert", "updateById"].includes(node.expression.name.text) && node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) texts.push(`INTO ${node.arguments[0].text}`)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return texts
}

const named = /\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+"?([A-Za-z_]\w*)/g
const files = []
const walk = (dir) => {
  for (const entry of NodeFs.readdirSync(dir, { withFileTypes: true })) {
    const path = NodePath.join(dir, entry.name)
    if (entry.isDirectory()) walk(path)
    else if (path.endsWith(".ts")) files.push(path)
  }
}
walk(NodePath.join(root, "src"))

const used = new Set()
for (const file of files.sort()) {
  const relative = NodePath.relative(root, file)
  const foreign = new Set()
  for (const text of literalTexts(file)) {
    for (const [, table] of text.matchAll(named)) {
      const owner = ownerOf.get(table)
      if (owner !== undefined && !relative.startsWith(owner)) foreign.add(table)
    }
  }
  const allowed = map.exceptions[relative] ?? []
  for (const table of foreign) {
    if (allowed.includes(table)) used.add(`${relative}:${table}`)
    else problems.push(`${relative}: names ${table}, which ${ownerOf.get(table)} owns (ask its service)`)
  }
}
for (const [file, owned] of Object.entries(map.exceptions)) {
  for (const table of owned) {
    if (!used.has(`${file}:${table}`)) problems.push(`${file}: exception for ${table} no longer needed, remove it`)
  }
}

if (problems.length > 0) {
  console.error(`table owners (schema/table-owners.json):\n  ${problems.join("\n  ")}`)
  process.exit(1)
}
