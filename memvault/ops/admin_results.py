"""The typed reports of the commands that keep a home: maintenance steps, backup and restore,
reindex, export, capture, the drainer, schedule, status, agent-setup and doctor.

Like `memvault.ops.results` (what the doors share to read memory), each is a ``TypedDict``: the
report is the JSON `--json` prints, key for key.
"""

from typing import TYPE_CHECKING, Any

from typing_extensions import NotRequired, TypedDict

if TYPE_CHECKING:
    from memvault.runs.budget import StageProgress
    from memvault.ops.results import MachineFiles


# -- maintenance steps (memvault.ops.maintenance; the `maintenance` flow's report) ------------
class Compacted(TypedDict):
    versions_left: dict[str, int]


class EdgesRebuilt(TypedDict):
    edges_before: int
    edges_after: int


class Merged(TypedDict):
    merged: int


class Tiered(TypedDict):
    cold: int


class Retired(TypedDict):
    retired_indexes: list[str]


class Checkpointed(TypedDict):
    checkpointed: bool


# -- reports of the commands that copy, rebuild or spool (`backup`, `restore`, `reindex`, `export`, capture)
class BackupReport(TypedDict):
    """`memvault backup`: where the copy went, how big, and whether the node index is in it."""

    home: str
    dest: str
    files: int
    bytes: int
    index_copied: bool
    note: str | None


class RestoreReport(TypedDict):
    """`memvault restore`: the ledger copied back (the one it replaced kept aside) and its counts."""

    home: str
    source: str
    kept_aside: str | None
    conversations: int
    messages: int
    chunks: int
    buckets: int
    note: str


class ReindexStarted(TypedDict):
    """`memvault reindex --background`: the process doing it and its log."""

    pid: int
    log: str


class Reindexed(TypedDict):
    """A rebuilt node index: the one it replaced, its size, nodes still to embed, edges, model."""

    old_index: str
    new_index: str
    nodes: int
    pending: int
    edges: int
    model: str


class ExportedTable(TypedDict):
    rows: int
    path: str


class ExportReport(TypedDict):
    """`memvault export`: the format, where, and each table's rows."""

    format: str
    dest: str
    tables: dict[str, ExportedTable]


class CaptureResult(TypedDict):
    """A capture hook's entry: the spool file written (None on failure, with ``error``) and the drainer."""

    spooled: str | None
    drainer: NotRequired[str]
    error: NotRequired[str]


# -- `schedule`, `unschedule` and the schedule part of `status` (memvault.ops.schedule) -------
class PlannedFile(TypedDict):
    path: str
    content: str


class SchedulePlan(TypedDict):
    """What `schedule` / `unschedule` writes, removes and runs (``--dry-run`` shows just this)."""

    platform: str
    unit_dir: str
    at: str | None
    timezone: str | None
    files: list[PlannedFile]
    remove: list[str]
    commands: list[str]


class ScheduleApplied(SchedulePlan):
    """A plan carried out, and the files whose content changed."""

    changed: list[str]


class ScheduleState(TypedDict):
    """For `status`: is the schedule installed, its files, the nightly time."""

    installed: bool
    files: list[str]
    at: str
    timezone: str


class NextRun(TypedDict):
    """The next scheduled nightly run, as a running Prefect server says (``note`` when it cannot)."""

    deployment: str | None
    next_run: str | None
    note: NotRequired[str]


# -- the live drainer (memvault.ops.drain) ---------------------------------------------------
class DrainCounts(TypedDict):
    """What one drain did."""

    entries: int
    files: int
    messages_new: int
    notes: int
    conversations_indexed: int
    nodes_written: int
    errors: list[str]


class DrainTotals(TypedDict):
    """What a drainer did until the spool was empty (``note``: why it stopped early)."""

    drains: int
    entries: int
    messages_new: int
    notes: int
    conversations_indexed: int
    errors: list[str]
    waiting: bool
    note: NotRequired[str]


# -- `memvault status` (memvault.ops.status) -------------------------------------------------
class LastRun(TypedDict):
    run_id: str
    status: str
    finished_at: str | None


class Status(TypedDict):
    """Counts, the last run, the index, the schedule and the hook daemon of a home.

    ``note`` says why the counts come from the last run report (a writer holds the ledger).
    """

    home: str
    engine: str
    conversations: int
    messages: int
    chunks: int
    buckets: int
    articles: int
    nodes: int
    last_run: LastRun | None
    note: NotRequired[str]
    warnings: list[str]
    engine_in_use: str | None
    index_uri: str
    index_bytes: int | None
    embedding_model: str | None
    schedule: ScheduleState
    next_run: NextRun | None
    configured_embedding_model: str
    topics_embedding_model: str  # chunks, clusters and synthesis (the bundled MiniLM when the index embeds otherwise)
    hook_daemon: dict[str, Any]


# -- `agent-setup` (memvault.ops.agent_setup): what memvault writes into an agent's config ----
class McpServerEntry(TypedDict):
    """The MCP server entry of Claude Code's ``mcpServers``."""

    type: str
    command: str
    args: list[str]
    env: dict[str, str]


class HookCommand(TypedDict):
    type: str
    command: str
    timeout: int


class HookGroup(TypedDict):
    """One hook group of an agent's settings (``matcher``: which sessions; none: every one)."""

    matcher: NotRequired[str]
    hooks: list[HookCommand]


class PlannedMcp(TypedDict):
    file: str
    key: str
    entry: McpServerEntry
    equivalent_command: str


class PlannedHook(TypedDict):
    file: str
    event: str
    entry: HookGroup


class PlannedHooks(TypedDict):
    file: str
    events: dict[str, HookGroup]


class PlannedSkill(TypedDict):
    file: str
    text: str


class ClaudeCodeSetup(TypedDict):
    """What `agent-setup claude-code` writes (``changes``: what it did, once applied)."""

    client: str
    memvault: str
    home: str
    mcp: PlannedMcp
    hook: PlannedHook
    hooks: PlannedHooks
    allow_write: bool
    skill: PlannedSkill
    changes: dict[str, str]


# -- `doctor` (memvault.ops.doctor) -----------------------------------------------------------
class CheckOut(TypedDict):
    """One check of `doctor`: ``state`` ok, warn or fail, and the fix when it is not ok."""

    area: str
    item: str
    state: str
    detail: str
    fix: str


# -- the run's plan and backlog (`run --dry-run --json`; the run report's `backlog`) ------------
class DryRunPlan(TypedDict):
    """What a run would process and the model calls it would make (`run --dry-run`)."""

    dry_run: bool
    stages: list[str]
    engine: str
    since: str | None
    transcript_files_changed: int
    transcript_files_seen: NotRequired[int]
    conversations_to_chunk: int
    chunks_to_cluster: int
    buckets_to_synthesize: dict[str, int]
    estimated_model_calls: dict[str, int]
    note: NotRequired[str]


class Backlog(TypedDict):
    """What a run left (`memvault.runs.budget.progress`'s figures, and the counts behind them)."""

    stages: dict[str, "StageProgress"]
    estimated_runs_to_finish: int | None
    conversations_left: int
    chunks_unassigned: int
    chunks_waiting_for_material: int
    buckets_pending: int
    chunks_pending: int


# -- the capture hook's spool entry (memvault.ops.capture.entry_for) ----------------------------
class SpoolEntry(TypedDict):
    """One hook event waiting in the spool: a transcript to read again, or (Codex's notify
    hook) the configured sources to look at."""

    op: str
    source: str
    path: NotRequired[str]
    session_id: NotRequired[str | None]
    cwd: str | None
    event: str | None


# -- a hub's record of who sent which session (memvault.ops.hub_inbox) --------------------------
class SentFrom(TypedDict):
    path: str
    first: float


class SessionSenders(TypedDict):
    machines: dict[str, SentFrom]


class HubStatus(TypedDict):
    """`GET /v1/status`: the hub's API version, clock, home, spool and drainer, and its machines."""

    api: int
    time: float
    home: str
    write: bool
    max_capture_bytes: int
    spool: int
    drainer: str
    machines: dict[str, "MachineFiles"]
    sessions_from_several_machines: int
