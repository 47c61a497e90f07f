/**
 * What shell completion offers for the words typed so far (`svc __complete -- machines ex`): the
 * subcommands, the options of the command reached, an option's choices, and machine names where a
 * machine is expected (asked of the server, quietly: a completion never prints an error).
 */
import type { CommandSpec } from "./CommandSpec.js"

export interface CompletionSources {
  /** The machine names, or none when the server cannot be asked. */
  readonly machines: () => Promise<ReadonlyArray<string>>
}

const machineWords = new Set(["machine", "--machine"])

/** The candidates for the last word of `words` (the one being typed; empty for a new word). */
export const complete = async (
  root: CommandSpec,
  words: ReadonlyArray<string>,
  sources: CompletionSources
): Promise<ReadonlyArray<string>> => {
  const typed = words.length === 0 ? "" : words[words.length - 1]!
  const before = words.slice(0, -1)
  let spec = root
  let positionals = 0
  let afterDashes = false
  let pending: CommandSpec["options"][number] | undefined
  for (const word of before) {
    if (pending !== undefined) {
      pending = undefined
      continue
    }
    if (word === "--") {
      afterDashes = true
      continue
    }
    if (!afterDashes && word.startsWith("-")) {
      const option = spec.options.find((o) => o.names.includes(word))
      if (option?.value !== undefined) pending = option
      continue
    }
    const next = afterDashes ? undefined : spec.subcommands.find((c) => c.name === word)
    if (next !== undefined) spec = next
    else positionals++
  }
  const matching = (candidates: ReadonlyArray<string>) => candidates.filter((c) => c.startsWith(typed))
  if (pending !== undefined) {
    if (pending.choices !== undefined) return matching(pending.choices)
    return machineWords.has(pending.names[0]!) ? matching(await sources.machines()) : []
  }
  if (typed.startsWith("-") && !afterDashes) {
    return matching([...spec.options.flatMap((o) => o.names), "--help"])
  }
  if (spec.subcommands.length > 0 && positionals === 0) return matching(spec.subcommands.map((c) => c.name))
  const arg = spec.args[Math.min(positionals, spec.args.length - 1)]
  if (arg === undefined || (positionals >= spec.args.length && !arg.repeated)) return []
  return machineWords.has(arg.name) ? matching(await sources.machines()) : []
}

/** The scripts `svc completion <shell>` prints: each asks `svc __complete` for the candidates. */
export const completionScripts = {
  bash: `# svc completion for bash: source <(svc completion bash), or save it in
# ~/.local/share/bash-completion/completions/svc
_svc() {
  local IFS=$'\\n'
  COMPREPLY=($(svc __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _svc svc
`,
  zsh: `#compdef svc
# svc completion for zsh: source <(svc completion zsh) after compinit, or save it as _svc in a
# directory of $fpath
_svc() {
  local -a candidates
  candidates=("\${(@f)$(svc __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "\${candidates[1]}" ]]; then
    compadd -a candidates
  else
    _files
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then _svc "$@"; else compdef _svc svc; fi
`,
  fish: `# svc completion for fish: svc completion fish > ~/.config/fish/completions/svc.fish
function __svc_complete
    set -l words (commandline -opc)
    set -e words[1]
    svc __complete -- $words (commandline -ct) 2>/dev/null
end
complete -c svc -f -a '(__svc_complete)'
`
} as const
