/** The error codes of snapshots and templates (api.md "Errors"), shared by SnapshotsApi and MachinesApi. */
import { Schema } from "effect"
import { problem, ProblemFields } from "../kernel/http/Problem.js"

export class SnapshotLimitReached extends Schema.TaggedError<SnapshotLimitReached>()(
  "snapshot_limit_reached",
  ProblemFields,
  problem(409, "The machine has as many snapshots as it may hold")
) {}

export class SnapshotPending extends Schema.TaggedError<SnapshotPending>()(
  "snapshot_pending",
  ProblemFields,
  problem(409, "The snapshot has not settled yet")
) {}

export class TemplateNameTaken extends Schema.TaggedError<TemplateNameTaken>()(
  "template_name_taken",
  ProblemFields,
  problem(409, "Another template of the organization has this name")
) {}

export class TemplateLimitReached extends Schema.TaggedError<TemplateLimitReached>()(
  "template_limit_reached",
  ProblemFields,
  problem(409, "The organization has as many templates as it may hold")
) {}

export class NoSnapshot extends Schema.TaggedError<NoSnapshot>()(
  "no_snapshot",
  ProblemFields,
  problem(404, "No ready snapshot")
) {}
