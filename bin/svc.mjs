#!/usr/bin/env node
// Entry of the svc binary in a checkout: TypeScript runs through tsx, so `npm ci` is the only build step.
import { register } from "tsx/esm/api"
register()
await import("../src/cli/main.ts")
