"""The typed results of the memory service: what every door (CLI, MCP, HTTP and the hub's
``/v1/`` routes) returns for recall, search, timeline, get and the article tools.

They are ``TypedDict``s, not classes with behaviour: a result is the JSON it is sent as, so
``--json``, the HTTP body and the hub's answer are the value itself (no conversion that could
drift), the hub client (`memvault.ops.hub_remote`) checks an answer back into the same type
with `parse`, and the MCP server's output schemas are built by pydantic from these types.
``typing_extensions.TypedDict`` because pydantic reads only that one on Python 3.11.
"""

from typing import TYPE_CHECKING, Any, TypeVar, cast

from typing_extensions import NotRequired, TypedDict

if TYPE_CHECKING:  # pydantic loads in `parse`: the hook path reads these types and stays light
    from pydantic import TypeAdapter

T = TypeVar("T")

# One term of a hit's score (``memvault.recall.scoring.Scored.explain``): a number, or what a
# term was computed from (``propagated_from``, ``hop_terms``), or None when it did not apply.
Explain = dict[str, float | int | str | None]


# The keys of each type are in the order the service writes them: `parse` returns them in the
# type's order, so a hub's answer prints exactly as a local one.


class SearchHit(TypedDict):
    """One `search` hit: where it is and how well it matched — no body."""

    id: str
    title: str | None
    path: str
    kind: str
    doc: str
    score: float
    project: str | None
    source: str | None


class RecallHit(TypedDict):
    """One passage of a recall block, with its citation and the terms of its score."""

    id: str
    path: str
    title: str | None
    kind: str
    score: float
    text: str
    cite: str
    project: str | None
    source: str | None
    explain: Explain


class Recall(TypedDict):
    """A ``<memory-recall>`` block and the hits it holds."""

    query: str
    block: str
    hits: list[RecallHit]


class SearchResult(TypedDict):
    """`search` as the HTTP and hub routes (and `--json`) send it."""

    query: str
    hits: list[SearchHit]


class TimelineNode(TypedDict):
    """A node around an anchor (``anchor``: it is the one asked for)."""

    id: str
    path: str
    kind: str
    title: str | None
    text: str
    anchor: bool


class Node(TypedDict, total=False):
    """A node of the index as `get` returns it: its columns, in the index's order (times as ISO
    strings). The order is kept: a hub's answer, checked by `parse`, comes back key for key."""

    id: str
    doc: str
    doc_kind: str
    path: str
    parent: str | None
    kind: str
    title: str | None
    text: str
    ref: str | None
    ord: int
    pending: bool
    content_hash: str | None
    created_at: str | None
    updated_at: str | None
    importance: float | None
    access: int | None
    similar: list[Any] | None
    reply: str | None
    kin: list[str] | None
    project: str | None
    source: str | None
    doc_date: str | None
    fts_text: str | None
    vector: list[float] | None


class ArticleSummary(TypedDict):
    """One line of `articles`."""

    title: str
    path: str
    words: int
    citations: int
    updated_at: str


class Article(TypedDict):
    """An article in full (Markdown)."""

    title: str
    path: str
    text: str


class Section(TypedDict):
    """One section of an article, its heading included."""

    article: str
    section: str
    path: str
    text: str


class TocEntry(TypedDict):
    """A section in an article's table of contents (``line``: where its heading is, 1-based)."""

    path: str
    title: str
    line: int | None


# ``in`` is a Python keyword: this one is declared the functional way.
ArticleLinks = TypedDict("ArticleLinks", {"article": str, "out": list[str], "in": list[str]})


class NoteResult(TypedDict):
    """A stored note (``queued``: spooled for a hub that could not be reached, so no id yet)."""

    id: NotRequired[str]
    cite: str | None
    queued: bool
    redactions: NotRequired[dict[str, int]]
    note: NotRequired[str]


_ADAPTERS: "dict[object, TypeAdapter[Any]]" = {}  # built once per type (a build costs milliseconds)


def parse(kind: type[T], answer: Any, what: str) -> T:
    """``answer`` (a hub's JSON) checked as ``kind``, or a `HubError` that says which part is off."""
    from pydantic import TypeAdapter, ValidationError

    from memvault.hub_wire import HubError

    try:
        adapter = _ADAPTERS.get(kind)
        if adapter is None:
            adapter = _ADAPTERS[kind] = TypeAdapter(kind)
        return cast(T, adapter.validate_python(answer))
    except ValidationError as exc:
        raise HubError(f"the hub's {what} is not what this memvault reads ({exc.errors()[0]['loc']}: "
                       f"{exc.errors()[0]['msg']}) — is it an older memvault?", True) from None


class PromptSignals(TypedDict):
    """What the prompt-recall decision weighed (``memvault.prompt_gate.Signals``, rounded)."""

    words: list[str]
    idf_mass: float
    coverage: float
    cos: float
    background: float
    margin: float
    agree: bool
    in_project: bool


class PromptRecallAnswer(TypedDict):
    """What the UserPromptSubmit hook injects (``block``, empty for nothing) and why."""

    block: str
    injected: bool
    reasons: list[str]
    signals: PromptSignals | None


class Health(TypedDict):
    """`GET /health`: the server answers, and what its index and vault hold."""

    status: str
    home: str
    nodes: int
    articles: int


class ArticleHtml(TypedDict):
    """An article rendered as safe HTML for the web page."""

    title: str
    path: str
    html: str


class CaptureStored(TypedDict):
    """A hub's answer to a capture: ``have`` (bytes it now holds), ``stored`` (bytes this call
    added), ``file`` (where, under the hub's home) and the machines that sent the session."""

    have: int
    stored: int
    file: str
    machines: list[str]


class ConversationHead(TypedDict):
    """What a conversation's list line and its read-back begin with; times ISO 8601 UTC."""

    id: str
    short_id: str
    ref: str
    date: str | None
    started_at: str | None
    updated_at: str | None
    source: str
    project: str | None
    title: str


class ConversationLine(ConversationHead):
    """One conversation in a list (`conversations`, `GET /conversations`)."""

    messages: int
    ignored: bool


class MessageOut(TypedDict):
    """One message of a conversation's active thread."""

    native_id: str
    seq: int
    role: str
    kind: str
    text: str
    timestamp: str | None
    low_value: bool


class ConversationOut(ConversationHead):
    """A conversation read back (`show`, `GET /conversations/{id}`): its head, then its active
    thread (``message_count`` counts every stored message, other branches' too)."""

    ignored: bool
    message_count: int
    other_branch_messages: int
    messages: list[MessageOut]


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


class MachineFiles(TypedDict):
    files: int
    bytes: int


class MachinesSummary(TypedDict):
    """A hub's captures per machine (`/v1/status`), and the sessions several machines sent."""

    machines: dict[str, MachineFiles]
    sessions_from_several_machines: int


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
