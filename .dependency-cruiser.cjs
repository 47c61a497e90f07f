// The layout's boundaries (docs/architecture.md "Boundaries"), checked by `npm run lint`.
// The kernel: src/kernel, the machine runtime, the drivers, the agent providers, the snapshot store.
const kernel = "^src/(kernel|runtime|drivers|agents/providers|snapshots/store)/"

module.exports = {
  forbidden: [
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
      to: { path: "^src/[^/]+/[^/]*Repo\\.ts$", pathNot: ["^src/$1/", "^src/runtime/"] }
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
