/**
 * `svc ... --help` as people read it: the full command in the usage line (`svc machines exec`),
 * every option and argument with its description in two columns, wrapped at 100 columns, plain text
 * (no colour codes, so it reads the same piped). Before @effect/cli parses, `routeArgs` answers
 * `--help` and a mistyped subcommand (naming its siblings) from the same spec (src/cli/CommandSpec.ts).
 */
import type { ArgSpec, CommandSpec, OptionSpec } from "./CommandSpec.js"

export const helpWidth = 100

const helpOption: OptionSpec = {
  names: ["--help", "-h"],
  value: undefined,
  description: "Show this help",
  optional: true,
  repeated: false,
  choices: undefined,
  defaultValue: undefined
}

/** Words wrapped to `width` columns; a word longer than the line stays whole on its own line. */
export const wrap = (text: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line === "") line = word
    else if (line.length + 1 + word.length <= width) line += " " + word
    else {
      lines.push(line)
      line = word
    }
  }
  if (line !== "") lines.push(line)
  return lines
}

/** Terms and their descriptions: the description beside the term, or under it when the term is long. */
const twoColumns = (rows: ReadonlyArray<readonly [string, string]>): Array<string> => {
  const termWidth = Math.min(Math.max(...rows.map(([term]) => term.length)), 30)
  const textWidth = helpWidth - 2 - termWidth - 2
  return rows.flatMap(([term, text]) => {
    const lines = wrap(text, textWidth)
    const indent = " ".repeat(2 + termWidth + 2)
    if (term.length > termWidth) return [`  ${term}`, ...lines.map((l) => indent + l)]
    return [`  ${term.padEnd(termWidth)}  ${lines[0] ?? ""}`.trimEnd(), ...lines.slice(1).map((l) => indent + l)]
  })
}

const optionTerm = (option: OptionSpec) => {
  const [long, ...aliases] = option.names
  const names = [...aliases, long].join(", ")
  return (option.value === undefined ? names : `${names} ${option.value}`) + (option.repeated ? " ..." : "")
}

const argTerm = (arg: ArgSpec) => `<${arg.name}>${arg.repeated ? "..." : ""}`

const optionNotes = (option: OptionSpec) =>
  [
    option.description,
    option.optional ? "" : "(required)",
    option.repeated && !/repeatable/.test(option.description) ? "(repeatable)" : "",
    option.defaultValue !== undefined && !/default/.test(option.description) ? `(default ${option.defaultValue})` : ""
  ]
    .filter((t) => t !== "").join(" ")

const usageArg = (arg: ArgSpec) => arg.optional ? `[${argTerm(arg)}]` : argTerm(arg)

/** The usage line(s): the full command, its required options, `[options]`, its arguments. */
const usage = (spec: CommandSpec): Array<string> => {
  const command = spec.path.join(" ")
  if (spec.subcommands.length > 0) return [`Usage: ${command} <command> [options]`]
  const required = spec.options.filter((o) => !o.optional).map((o) => `${o.names[0]} ${o.value ?? ""}`.trimEnd())
  const optional = spec.options.some((o) => o.optional) ? ["[options]"] : []
  // An argv after the others is given after `--` (`svc machines exec web -- ls -l`).
  const args = spec.args.map((a) => a.repeated && /^command$/i.test(a.name) ? `[--] ${usageArg(a)}` : usageArg(a))
  const words = [...required, ...optional, ...args]
  const lines = wrap(words.join(" "), helpWidth - 7 - command.length - 1)
  if (lines.length === 0) return [`Usage: ${command}`]
  return lines.map((line, i) => i === 0 ? `Usage: ${command} ${line}` : " ".repeat(7 + command.length + 1) + line)
}

/** The help of one command, plain text ending in a newline, no line over 100 columns. */
export const renderHelp = (spec: CommandSpec, extra: { readonly version?: string } = {}): string => {
  const out: Array<string> = [...usage(spec), ""]
  if (extra.version !== undefined) out.push(extra.version, "")
  if (spec.description !== "") out.push(...wrap(spec.description, helpWidth), "")
  if (spec.subcommands.length > 0) {
    out.push("Commands:", ...twoColumns(spec.subcommands.map((c) => [c.name, c.description])), "")
  }
  if (spec.args.length > 0) {
    out.push("Arguments:", ...twoColumns(spec.args.map((a) => [argTerm(a), a.description])), "")
  }
  const options = [...spec.options, helpOption]
  if (extra.version !== undefined) {
    options.push({ ...helpOption, names: ["--version"], description: "Print svc's version and its Node's" })
  }
  out.push("Options:", ...twoColumns(options.map((o) => [optionTerm(o), optionNotes(o)])), "")
  if (spec.subcommands.length > 0) {
    out.push(
      ...wrap(`Run \`${spec.path.join(" ")} <command> --help\` for a command's options and arguments.`, helpWidth)
    )
  }
  return out.join("\n").replace(/\n+$/, "") + "\n"
}

/** Edit distance, for naming the command someone probably meant. */
const distance = (a: string, b: string) => {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.length]!
}

/** The subcommands close to a mistyped word: a prefix either way, or at most two edits away. */
export const suggestions = (spec: CommandSpec, word: string): ReadonlyArray<string> =>
  spec.subcommands.map((c) => c.name).filter((name) =>
    name.startsWith(word) || word.startsWith(name) || distance(name, word) <= Math.max(1, Math.min(2, word.length / 3))
  )

/** Where the words lead: the command they name and whether they ask for help. */
export type Route =
  | { readonly _tag: "Help"; readonly spec: CommandSpec }
  | { readonly _tag: "UnknownCommand"; readonly spec: CommandSpec; readonly word: string }
  | { readonly _tag: "Run" }

/** Options that take a value, so the word after one is not read as a command. */
const takesValue = (spec: CommandSpec, word: string) => {
  if (word.includes("=")) return false
  const option = spec.options.find((o) => o.names.includes(word))
  return option !== undefined && option.value !== undefined
}

/**
 * Follows the words through the command tree: `--help` anywhere before `--` is help for the
 * command reached; a word where a subcommand is expected that names none is an unknown command; a
 * group with no subcommand given shows its help. Everything else is @effect/cli's to parse.
 */
export const routeArgs = (root: CommandSpec, argv: ReadonlyArray<string>): Route => {
  let spec = root
  let positional = false
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === "--") break
    if (word === "--help" || word === "-h") return { _tag: "Help", spec }
    if (word.startsWith("-")) {
      if (takesValue(spec, word)) i++
      continue
    }
    if (spec.subcommands.length === 0) {
      positional = true
      continue
    }
    const next = spec.subcommands.find((c) => c.name === word)
    if (next === undefined) return { _tag: "UnknownCommand", spec, word }
    spec = next
  }
  // `svc --version` and the like are @effect/cli's; a bare group (`svc machines`) is its help.
  const builtIn = argv.some((w) => w === "--version" || w === "--completions" || w === "--wizard")
  if (!positional && spec.subcommands.length > 0 && !builtIn) return { _tag: "Help", spec }
  return { _tag: "Run" }
}

/** The lines for a mistyped command: what it was, what it may have meant, what there is. */
export const unknownCommandText = (spec: CommandSpec, word: string): string => {
  const near = suggestions(spec, word)
  const command = spec.path.join(" ")
  return [
    `${command}: unknown command ${JSON.stringify(word)}${
      near.length > 0 ? `; did you mean ${near.join(" or ")}?` : ""
    }`,
    ...wrap(`The commands of ${command}: ${spec.subcommands.map((c) => c.name).join(", ")}`, helpWidth),
    `Run \`${command} --help\` for what each does.`
  ].join("\n") + "\n"
}
