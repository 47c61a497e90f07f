/**
 * What a command takes, read from its @effect/cli definition: its subcommands, options and
 * arguments with their descriptions. Help (src/cli/Help.ts), the check of a mistyped command and
 * shell completion (src/cli/Completion.ts) are all made from it, so they cannot drift from what
 * the parser accepts. @effect/cli exposes no walk over a command, so this reads its descriptor's
 * tagged structure (pinned with the package's minor version).
 */
import { type Command, HelpDoc } from "@effect/cli"

export interface OptionSpec {
  /** `--name` first, then its aliases (`-f`). */
  readonly names: ReadonlyArray<string>
  /** What follows the option (`N`, `small|default|large`); undefined for a flag. */
  readonly value: string | undefined
  readonly description: string
  readonly optional: boolean
  readonly repeated: boolean
  readonly choices: ReadonlyArray<string> | undefined
  /** The value it has when not given, when that is a plain value. */
  readonly defaultValue: string | undefined
}

export interface ArgSpec {
  readonly name: string
  readonly description: string
  readonly optional: boolean
  readonly repeated: boolean
}

export interface CommandSpec {
  readonly name: string
  /** The words that run it: `["svc", "machines", "exec"]`. */
  readonly path: ReadonlyArray<string>
  readonly description: string
  readonly options: ReadonlyArray<OptionSpec>
  readonly args: ReadonlyArray<ArgSpec>
  readonly subcommands: ReadonlyArray<CommandSpec>
}

type Node = { readonly _tag: string; readonly [key: string]: any }

const plain = (doc: HelpDoc.HelpDoc) =>
  HelpDoc.toAnsiText(doc).replace(/\x1b\[[0-9;]*m/g, "").replace(/\s+/g, " ").trim()

const placeholder = (single: Node): { value: string | undefined; choices: ReadonlyArray<string> | undefined } => {
  const primitive = single.primitiveType as Node
  if (single.pseudoName?._tag === "Some") return { value: single.pseudoName.value, choices: undefined }
  switch (primitive._tag) {
    case "Bool":
      return { value: undefined, choices: undefined }
    case "Choice": {
      const choices = (primitive.alternatives as ReadonlyArray<[string, unknown]>).map(([name]) => name)
      const joined = choices.join("|")
      return { value: joined.length <= 30 ? joined : "CHOICE", choices }
    }
    case "Integer":
      return { value: "N", choices: undefined }
    case "Float":
      return { value: "NUMBER", choices: undefined }
    case "Path":
      return { value: "PATH", choices: undefined }
    default:
      return { value: String(single.name).toUpperCase().replace(/-/g, "_"), choices: undefined }
  }
}

const shownDefault = (fallback: unknown) =>
  typeof fallback === "string" || typeof fallback === "number" ? String(fallback) : undefined

const optionsOf = (
  node: Node,
  optional = false,
  repeated = false,
  defaultValue: string | undefined = undefined
): Array<OptionSpec> => {
  switch (node._tag) {
    case "Empty":
      return []
    case "Single": {
      const { choices, value } = placeholder(node)
      const aliases = (node.aliases as ReadonlyArray<string>).map((a) => a.length === 1 ? `-${a}` : `--${a}`)
      // A flag (a boolean) is optional by nature: absent means false.
      const flag = value === undefined
      return [{
        names: [`--${node.name}`, ...aliases],
        value,
        description: plain(node.description),
        optional: optional || flag,
        repeated,
        choices,
        defaultValue
      }]
    }
    case "KeyValueMap":
      return optionsOf(node.argumentOption, optional, true)
    case "Variadic":
      return optionsOf(node.argumentOption, optional || (node.min._tag === "None" || node.min.value === 0), true)
    case "WithDefault":
      return optionsOf(node.options, true, repeated, shownDefault(node.fallback))
    case "WithFallback":
      return optionsOf(node.options, true, repeated)
    case "Map":
      return optionsOf(node.options, optional, repeated)
    case "Both":
    case "OrElse":
      return [...optionsOf(node.left, optional, repeated), ...optionsOf(node.right, optional, repeated)]
    default:
      return []
  }
}

const argsOf = (node: Node, optional = false, repeated = false): Array<ArgSpec> => {
  switch (node._tag) {
    case "Empty":
      return []
    case "Single":
      return [{
        name: node.pseudoName?._tag === "Some" ? node.pseudoName.value : node.name,
        description: plain(node.description),
        optional,
        repeated
      }]
    case "Variadic":
      return argsOf(node.args, optional || node.min._tag === "None" || node.min.value === 0, true)
    case "WithDefault":
    case "WithFallbackConfig":
      return argsOf(node.args, true, repeated)
    case "Map":
      return argsOf(node.args, optional, repeated)
    case "Both":
      return [...argsOf(node.left, optional, repeated), ...argsOf(node.right, optional, repeated)]
    default:
      return []
  }
}

const specOf = (node: Node, parentPath: ReadonlyArray<string>): CommandSpec => {
  switch (node._tag) {
    case "Map":
      return specOf(node.command, parentPath)
    case "Subcommands": {
      const parent = specOf(node.parent, parentPath)
      return {
        ...parent,
        subcommands: (node.children as ReadonlyArray<Node>).map((child) => specOf(child, parent.path))
      }
    }
    default: {
      const name = String(node.name)
      return {
        name,
        path: [...parentPath, name],
        description: plain(node.description ?? HelpDoc.empty),
        options: node._tag === "Standard" ? optionsOf(node.options) : [],
        args: node._tag === "Standard" ? argsOf(node.args) : [],
        subcommands: []
      }
    }
  }
}

/** The spec of a command and everything under it. */
export const commandSpec = (command: Command.Command<any, any, any, any>): CommandSpec =>
  specOf((command as unknown as { descriptor: Node }).descriptor, [])

/** Every command under (and including) this one, depth first. */
export const allCommands = (spec: CommandSpec): ReadonlyArray<CommandSpec> => [
  spec,
  ...spec.subcommands.flatMap(allCommands)
]
