/** The error codes of snapshots and templates (api.md "Errors"), shared by SnapshotsApi and MachinesApi. */
import { ProblemError } from "../kernel/http/Problem.js"

export class SnapshotLimitReached extends ProblemError<SnapshotLimitReached>()(
  "snapshot_limit_reached",
  409,
  "The machine has as many snapshots as it may hold"
) {}

export class SnapshotPending
  extends ProblemError<SnapshotPending>()("snapshot_pending", 409, "The snapshot has not settled yet")
{}

export class TemplateNameTaken extends ProblemError<TemplateNameTaken>()(
  "template_name_taken",
  409,
  "Another template of the organization has this name"
) {}

export class TemplateLimitReached extends ProblemError<TemplateLimitReached>()(
  "template_limit_reached",
  409,
  "The organization has as many templates as it may hold"
) {}

export class NoSnapshot extends ProblemError<NoSnapshot>()("no_snapshot", 404, "No ready snapshot") {}
