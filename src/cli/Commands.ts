/** Every `svc` command, in the order `svc --help` lists them; main.ts runs it, tests walk it. */
import { Command } from "@effect/cli"
import { OpenApi } from "@effect/platform"
import { Console } from "effect"
import { Api } from "../Api.js"
import { svcVersion } from "../kernel/Version.js"
import { admin } from "./Admin.js"
import { agent } from "./Agent.js"
import { agents } from "./Agents.js"
import { alerts } from "./Alerts.js"
import { billing, usage } from "./Billing.js"
import { completion } from "./Completion.js"
import { doctor } from "./Doctor.js"
import { environments } from "./Environments.js"
import { files } from "./Files.js"
import { keys } from "./Keys.js"
import { login, logout } from "./Login.js"
import { machines } from "./Machines.js"
import { members, whoami } from "./Members.js"
import { ops } from "./Operations.js"
import { ports, sshKeys } from "./Ports.js"
import { serve } from "./Serve.js"
import { snapshots } from "./Snapshots.js"
import { templates } from "./Templates.js"
import { terminal } from "./Terminal.js"

const openapi = Command.make("openapi", {}, () => Console.log(JSON.stringify(OpenApi.fromApi(Api), null, 2))).pipe(
  Command.withDescription("Print the OpenAPI document of the API")
)

export const svc = Command.make("svc").pipe(
  Command.withDescription("svc: isolated machines for organizations, with coding agents inside them"),
  Command.withSubcommands([
    login,
    logout,
    whoami,
    machines,
    ops,
    files,
    terminal,
    ports,
    sshKeys,
    snapshots,
    templates,
    agent,
    environments,
    keys,
    members,
    usage,
    billing,
    alerts,
    serve,
    doctor,
    admin,
    agents,
    openapi,
    completion
  ])
)

// `svc --version` (and the help's first lines): svc's version and the Node it runs on, which for the
// single file is the one it embeds (bin/build.mjs).
export const version = `${svcVersion} (node ${process.version})`
