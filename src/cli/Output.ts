/**
 * What remote commands print: a table or a few `key: value` lines for people, the API's JSON for
 * programs (`--json`, one document on stdout, nothing else there). Messages for people that are not
 * the answer (progress, hints) go to stderr, so stdout stays the answer in both modes.
 */
import { Options } from "@effect/cli"
import { Effect } from "effect"

export const json = Options.boolean("json").pipe(Options.withDescription("Print the answer as JSON, for programs"))

export const wait = Options.boolean("wait").pipe(
  Options.withDescription("Wait until the operation has finished, showing its progress")
)

export interface Column<A> {
  readonly header: string
  readonly value: (row: A) => string | number | boolean | null | undefined
}

const cell = (value: string | number | boolean | null | undefined) =>
  value === null || value === undefined || value === "" ? "-" : String(value)

/** Rows under upper-case headers, columns padded to their widest cell (the last one is not). */
export const renderTable = <A>(rows: ReadonlyArray<A>, columns: ReadonlyArray<Column<A>>): string => {
  const cells = [
    columns.map((c) => c.header.toUpperCase()),
    ...rows.map((row) => columns.map((c) => cell(c.value(row))))
  ]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)))
  return cells.map((line) => line.map((text, i) => i === line.length - 1 ? text : text.padEnd(widths[i]!)).join("  "))
    .join("\n") + "\n"
}

export const stdout = (text: string) => Effect.sync(() => process.stdout.write(text))
export const stderr = (text: string) => Effect.sync(() => process.stderr.write(text))

export const printJson = (value: unknown) => stdout(JSON.stringify(value, null, 2) + "\n")

/** A list: the JSON array, or the table (a note on stderr when it is empty). */
export const printList = <A>(asJson: boolean, rows: ReadonlyArray<A>, columns: ReadonlyArray<Column<A>>) =>
  asJson ? printJson(rows) : rows.length === 0 ? stderr("nothing to list\n") : stdout(renderTable(rows, columns))

/** One resource: its JSON, or `field: value` lines of the fields people read. */
export const printRecord = <A extends object>(asJson: boolean, value: A, fields: ReadonlyArray<Column<A>>) =>
  asJson ? printJson(value) : stdout(renderFields(fields.map((f) => [f.header, cell(f.value(value))] as const)))

const renderFields = (pairs: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...pairs.map(([name]) => name.length)) + 1
  return pairs.map(([name, value]) => `${(name + ":").padEnd(width)} ${value}`).join("\n") + "\n"
}

/** An ISO time as people read it in a table: `2026-11-24 14:41:16` (UTC). */
export const time = (iso: string | null | undefined) =>
  iso == null ? null : iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "")

export const bytes = (n: number) => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]
  let value = n
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`
}
