// The layout's boundaries (docs/architecture.md "Boundaries"), checked by `npm run lint`.
// The kernel: src/kernel, the machine runtime, the drivers, the agent providers, the snapshot store.
const kernel = "^src/(kernel|runtime|drivers|agents/providers|snapshots/store)/"
// The engine's tables' repositories (machines, operations): runtime/EngineReads.ts reads them for other areas.
const engineRepos = "^src/runtime/(MachinesRepo|OperationsRepo)\\.ts$"

// Areas depend one way (docs/architecture.md "The order of the areas"): a folder imports only
// folders listed before it. The kernel's parts come first, then the product areas, bottom to top.
const order = [
  "kernel",
  "drivers",
  "agents/providers",
  "snapshots/store",
  "runtime",
  "hosts",
  "ports",
  "operations",
  "terminals",
  "metrics",
  "organizations",
  "identity",
  "limits",
  "machines",
  "snapshots",
  "environments",
  "agents",
  "webhooks",
  "billing",
  "alerts",
  "operator",
  "pages"
]
// The files that still import a folder above their own: a list that only shrinks (the plan for
// each is in docs/architecture.md).
const upward = [
  // The membership half of organizations (members, invitations, deletion) stands on identity,
  // billing, machines and snapshots: its own folder above them to be.
  "^src/organizations/(Api|Http|Live|Members|Invitations|Deletion|Worker)\\.ts$",
  // A create from a template (routed by machines, answered by snapshots) and a delete's snapshot_pending.
  "^src/machines/(Api|Http)\\.ts$"
]
const folder = (area) =>
  area === "snapshots"
    ? "^src/snapshots/(?!store/)"
    : area === "agents"
    ? "^src/agents/(?!providers/)"
    : `^src/${area}/`
const oneWay = order.slice(0, -1).map((area, i) => ({
  name: `areas-depend-one-way (${area})`,
  comment: "A folder imports only the folders before it in the order (docs/architecture.md).",
  severity: "error",
  from: { path: folder(area), pathNot: upward },
  to: { path: order.slice(i + 1).map(folder) }
}))

module.exports = {
  forbidden: [
    ...oneWay,
    {
      name: "no-cycles",
      comment: "Modules form no import cycle.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "kernel-imports-no-area",
      comment: "The kernel imports only the kernel: areas depend on it, never the other way.",
      severity: "error",
      from: { path: kernel },
      to: { path: "^src/", pathNot: [kernel] }
    },
    {
      name: "repositories-stay-in-their-area",
      comment: "An area's repository is used by its own folder only; other areas go through its service.",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { path: "^src/[^/]+/[^/]*Repo\\.ts$", pathNot: ["^src/$1/", engineRepos] }
    },
    {
      name: "engine-tables-through-engine-reads",
      comment:
        "The engine's repositories serve the engine and the areas that accept and settle its work; any other area asks runtime/EngineReads.ts. Terminals still marks a machine's activity through MachinesRepo (a named write of the engine to be).",
      severity: "error",
      from: { path: "^src/[^/]+/", pathNot: ["^src/(runtime|machines|operations)/", "^src/terminals/Terminals\\.ts$"] },
      to: { path: engineRepos }
    },
    {
      name: "services-import-no-contract",
      comment: "Services, repositories and workers never import an API contract: DTOs are built in Http.ts or Dto.ts.",
      severity: "error",
      from: {
        path: "^src/[^/]+/",
        pathNot: ["/(Api|Http|Dto)\\.ts$", "Http\\.ts$", "Api\\.ts$", "^src/cli/", "^src/client/"]
      },
      to: { path: "(^src/Api\\.ts$|Api\\.ts$)" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] }
  }
}
