#!/usr/bin/env node
/**
 * docs/api.md from the OpenAPI document: `node bin/api-doc.mjs schema/openapi.json > docs/api.md`
 * (`npm run openapi` runs it; `-` reads the document from stdin). Plain Node, no dependencies: the
 * reference a reader can open in the repository, made from the same document /docs renders, so it
 * is never edited by hand (test/api/openapi.test.ts fails when it is stale).
 */
import * as NodeFs from "node:fs"

const source = process.argv[2] ?? "schema/openapi.json"
const document = JSON.parse(NodeFs.readFileSync(source === "-" ? 0 : source, "utf8"))
const schemas = document.components?.schemas ?? {}

const refName = (ref) => ref.replace("#/components/schemas/", "")
const anchor = (name) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-")
const cell = (text) => String(text).replace(/\|/g, "\\|").replace(/\n+/g, " ")
const code = (value) => "`" + (typeof value === "string" ? value : JSON.stringify(value)) + "`"

/** A schema as a short type: `string`, `Machine`, `"a" \| "b"`, `integer[]`. */
const typeOf = (schema) => {
  if (schema === undefined) return "any"
  if (schema.$ref !== undefined) {
    const name = refName(schema.$ref)
    const target = schemas[name]
    return target?.type === "object" || target?.anyOf !== undefined ? `[${name}](#${anchor(name)})` : typeOf(target)
  }
  if (schema.enum !== undefined) return schema.enum.map((value) => code(value)).join(" or ")
  if (schema.allOf !== undefined && schema.type === undefined) return typeOf(schema.allOf[0])
  if (schema.anyOf !== undefined) return [...new Set(schema.anyOf.map(typeOf))].join(" or ")
  if (schema.type === "array") return `${typeOf(schema.items)}[]`
  const values = typeof schema.additionalProperties === "object"
    ? schema.additionalProperties
    : Object.values(schema.patternProperties ?? {})[0]
  if (schema.type === "object" && Object.keys(schema.properties ?? {}).length === 0 && values !== undefined) {
    return `map of ${typeOf(values)}`
  }
  if (schema.type === "null") return "null"
  if (schema.format === "uuid" || schema.$id === "/schemas/UUID") return "uuid"
  return schema.format === undefined ? (schema.type ?? "any") : `${schema.type} (${schema.format})`
}

/** Effect's own words for a refinement ("a string at least 1 character(s) long"): the bounds say it. */
const generated = /^an? (string|number|integer|non-negative|array of|Universally Unique|object to be decoded)\b/

/** The schema and what it is made of (its `$ref`'s target, its `allOf` members), for their rules. */
const partsOf = (schema) => {
  if (schema === undefined) return []
  const target = schema.$ref !== undefined ? schemas[refName(schema.$ref)] : undefined
  return [schema, ...(schema.allOf ?? []).flatMap(partsOf), ...(target === undefined ? [] : partsOf(target))]
}

/** What a schema allows beyond its type: bounds, pattern, default, its description. */
const rulesOf = (schema, fallback = {}) => {
  const parts = partsOf(schema)
  const first = (key) => parts.map((part) => part[key]).find((value) => value !== undefined)
  const rules = []
  const description = [...parts.map((part) => part.description), fallback.description]
    .find((text) => text !== undefined && !generated.test(text))
  if (description !== undefined) rules.push(description)
  /** A bound the description does not already give (in bytes, say). */
  const bound = (min, max, say) => {
    const [low, high] = [first(min), first(max)].map((n) => (description?.includes(String(n)) ? undefined : n))
    if (low !== undefined || high !== undefined) rules.push(say(low, high))
  }
  const range = (unit) => (low, high) =>
    low === undefined
      ? `at most ${high} ${unit}`
      : high === undefined
      ? `at least ${low} ${unit}`
      : `${low}-${high} ${unit}`
  bound("minLength", "maxLength", range("characters"))
  bound(
    "minimum",
    "maximum",
    (low, high) =>
      low === undefined ? `at most ${high}` : high === undefined ? `at least ${low}` : `from ${low} to ${high}`
  )
  bound("minItems", "maxItems", range("items"))
  const pattern = first("pattern")
  const uuid = parts.some((part) => part.format === "uuid" || part.$id === "/schemas/UUID")
  if (pattern !== undefined && pattern !== "^[^\\u0000]*$" && !uuid && !description?.includes(pattern)) {
    rules.push(`pattern ${code(pattern)}`)
  }
  const names = parts.map((part) => part.propertyNames?.pattern).find((value) => value !== undefined)
  if (names !== undefined) rules.push(`names match ${code(names)}`)
  if (schema?.type === "array" && schema.items !== undefined) {
    const items = rulesOf(schema.items)
    if (items !== "") rules.push(`each item: ${items.replaceAll("; ", ", ")}`)
  }
  const values = schema?.patternProperties === undefined ? undefined : Object.values(schema.patternProperties)[0]
  if (values !== undefined) {
    const each = rulesOf(values)
    if (each !== "") rules.push(`each value: ${each.replaceAll("; ", ", ")}`)
  }
  const fallbackDefault = first("default")
  if (fallbackDefault !== undefined) rules.push(`default ${code(fallbackDefault)}`)
  return rules.join("; ")
}

const resolve = (schema) => (schema?.$ref !== undefined ? resolve(schemas[refName(schema.$ref)]) : schema)

/** The members of an object schema as a table. */
const fieldsTable = (schema, request = false) => {
  const object = resolve(schema)
  if (object?.type !== "object" || object.properties === undefined) return [`Body: ${typeOf(schema)}.`, ""]
  const required = new Set(object.required ?? [])
  const rows = Object.entries(object.properties).map(([name, property]) =>
    `| \`${name}\` | ${cell(typeOf(property))} | ${required.has(name) ? "yes" : "no"} | ${cell(rulesOf(property))} |`
  )
  return [
    "| Member | Type | Required | Rules |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    object.additionalProperties === false && request ? "Other members are refused (422).\n" : ""
  ]
}

const methods = ["get", "post", "put", "patch", "delete"]
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  methods.filter((method) => item[method] !== undefined).map((method) => ({ path, method, operation: item[method] }))
)

const securityText = (security) => {
  if (security.length === 0) return "none"
  return security.map((requirement) => Object.keys(requirement).join(" + ")).join(", or ")
}

const lines = []
const out = (...more) => lines.push(...more)

out(
  `# ${document.info.title} API reference`,
  "",
  "<!-- Generated from schema/openapi.json by bin/api-doc.mjs (npm run openapi); do not edit by hand. -->",
  "",
  `Version ${document.info.version}. The same document is served at \`GET /v1/openapi.json\` and rendered at \`/docs\`.`,
  "",
  document.info.description ?? "",
  "",
  "## Security schemes",
  "",
  "| Name | Kind | Description |",
  "| --- | --- | --- |",
  ...Object.entries(document.components.securitySchemes).map(([name, scheme]) =>
    `| \`${name}\` | ${scheme.type === "http" ? `HTTP ${scheme.scheme}` : `${scheme.in} \`${scheme.name}\``} | ${
      cell(scheme.description ?? "")
    } |`
  ),
  "",
  "## Routes",
  ""
)

for (const tag of document.tags) {
  const mine = operations.filter(({ operation }) => operation.tags?.[0] === tag.name)
  out(
    `- [${tag.name}](#${anchor(tag.name)})`,
    ...mine.map(({ method, operation, path }) =>
      `  - [${method.toUpperCase()} \`${path}\`](#${anchor(operation.operationId)}): ${operation.summary}`
    )
  )
}
out("")

for (const tag of document.tags) {
  out(`## ${tag.name}`, "", tag.description ?? "", "")
  for (const { method, operation, path } of operations.filter(({ operation }) => operation.tags?.[0] === tag.name)) {
    out(
      `<a id="${anchor(operation.operationId)}"></a>`,
      "",
      `### ${method.toUpperCase()} \`${path}\``,
      "",
      `**${operation.summary}** (\`${operation.operationId}\`)`,
      "",
      operation.description ?? "",
      "",
      `Security: ${securityText(operation.security)}.`,
      ""
    )
    if (operation.parameters.length > 0) {
      out(
        "| Parameter | In | Type | Required | Rules |",
        "| --- | --- | --- | --- | --- |",
        ...operation.parameters.map((parameter) =>
          `| \`${parameter.name}\` | ${parameter.in} | ${cell(typeOf(parameter.schema))} | ${
            parameter.required ? "yes" : "no"
          } | ${cell(rulesOf(parameter.schema, parameter))} |`
        ),
        ""
      )
    }
    const body = operation.requestBody?.content?.["application/json"]?.schema
    if (body !== undefined) {
      out(
        `Body (${operation.requestBody.required ? "required" : "may be left out"}):`,
        "",
        ...fieldsTable(body, true),
        ...(resolve(body).allOf ?? []).some((rule) => rule.oneOf !== undefined)
          ? [
            `Exactly one of ${
              resolve(body).allOf.flatMap((rule) => rule.oneOf ?? []).map((one) => code(one.required[0])).join(", ")
            }.`,
            ""
          ]
          : []
      )
    }
    out("| Status | Answer |", "| --- | --- |")
    const inline = []
    for (const [status, response] of Object.entries(operation.responses)) {
      const content = Object.entries(response.content ?? {})
      if (Number(status) >= 400) {
        out(`| ${status} | ${cell(response.description)} |`)
        continue
      }
      const shapes = content.map(([type, { schema }]) => {
        const object = schema.$ref === undefined && schema.type === "object" && schema.properties !== undefined
        if (object) inline.push({ status, schema })
        return `${object ? "the object below" : typeOf(schema)} (${type})`
      })
      out(`| ${status} | ${cell(shapes.length === 0 ? "no body" : shapes.join("; or "))} |`)
    }
    out("")
    for (const { schema, status } of inline) out(`Answer (${status}):`, "", ...fieldsTable(schema))
  }
}

out("## Shapes", "")
for (const [name, schema] of Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))) {
  const object = resolve(schema)
  if (object?.type !== "object" && object?.anyOf === undefined) continue
  out(`<a id="${anchor(name)}"></a>`, "", `### ${name}`, "", schema.description ?? "", "")
  if (object.type === "object") out(...fieldsTable(schema))
  else out(`One of: ${typeOf(object)}.`, "")
}

process.stdout.write(lines.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd() + "\n")
