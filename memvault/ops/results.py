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
    date: NotRequired[str | None]  # the day a turn was said (YYYY-MM-DD), None for other nodes; absent from an older hub
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
    date: NotRequired[str | None]  # as a search hit's
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
    date: NotRequired[str | None]  # as a search hit's
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

    from memvault.live.hub_wire import HubError

    try:
        adapter = _ADAPTERS.get(kind)
        if adapter is None:
            adapter = _ADAPTERS[kind] = TypeAdapter(kind)
        return cast(T, adapter.validate_python(answer))
    except ValidationError as exc:
        raise HubError(f"the hub's {what} is not what this memvault reads ({exc.errors()[0]['loc']}: "
                       f"{exc.errors()[0]['msg']}) — is it an older memvault?", True) from None


class PromptSignals(TypedDict):
    """What the prompt-recall decision weighed (``memvault.live.prompt_gate.Signals``, rounded)."""

    words: list[str]
    idf_mass: float
    coverage: float
    cos: float
    background: float
    margin: float
    top_cos: float
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


class MachineFiles(TypedDict):
    files: int
    bytes: int


class MachinesSummary(TypedDict):
    """A hub's captures per machine (`/v1/status`), and the sessions several machines sent."""

    machines: dict[str, MachineFiles]
    sessions_from_several_machines: int
