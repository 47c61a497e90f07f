/** `svc completion bash|zsh|fish`: the script that completes svc's commands, options and machine names. */
import { Args, Command } from "@effect/cli"
import { completionScripts } from "./Completer.js"
import { stdout } from "./Output.js"

export const completion = Command.make("completion", {
  shell: Args.choice([["bash", "bash"], ["zsh", "zsh"], ["fish", "fish"]] as const, { name: "shell" }).pipe(
    Args.withDescription("The shell to print the script for: bash, zsh or fish")
  )
}, (flags) => stdout(completionScripts[flags.shell])).pipe(
  Command.withDescription("Print the shell completion script (commands, options, choices, machine names)")
)
