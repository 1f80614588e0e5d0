"""Settings: one pydantic-settings root with nested, described sections.

Precedence, lowest first: defaults < ``<home>/memvault.toml`` < ``MEMVAULT_*`` environment
(nested as ``MEMVAULT_SECTION__FIELD``; the engine is ``MEMVAULT_ENGINE``) < CLI flags.
Settings are loaded by :func:`load_settings` in the composition root and passed down;
there is no module-level instance.

Every section refuses keys it does not know and values out of range, so a typo in
memvault.toml or the environment is an error naming the key, never a silent default. The root
stays lenient towards the environment (``MEMVAULT_UNIT_DIR`` and the like are not settings);
top-level keys of memvault.toml are checked by :mod:`memvault.config.settings_file`.
"""

import os
import re
from contextvars import ContextVar
from datetime import time
from pathlib import Path
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator,
                      model_validator)
from pydantic_settings import BaseSettings, InitSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from memvault.engines.settings import EngineName, EngineSettings
from memvault.errors import ConfigError
from memvault.live.prompt_gate import SERVE_TIMEOUT_S, GateParams
from memvault.config.settings_file import combine, describe_errors, read_toml, unknown_top_level_keys
from memvault.sources.kinds import ConfiguredKind

# The memvault.toml data `load_settings` is validating, for `Settings.settings_customise_sources`
# (pydantic-settings asks the class for its sources; set only for the duration of one load).
_TOML_DATA: ContextVar[dict[str, Any] | None] = ContextVar("memvault_toml_data", default=None)


BUNDLED_MODELS = ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-static", "all-MiniLM-L6-v2-int8")  # memvault.embeddings.base names them too
FP32_MODEL = "all-MiniLM-L6-v2"  # the default embedder before int8 became it
# The live index's location files (stores.location works with them): the pointer a reindex
# swaps and the default folder. Every index made since int8 became the default writes
# INDEX_EMBEDDER_FILE when it is made; a live index without it was built by FP32_MODEL.
INDEX_POINTER = "nodes.current"
DEFAULT_INDEX = "nodes.lance"
INDEX_EMBEDDER_FILE = "nodes.embedder"


class Section(BaseModel):
    """A section of memvault.toml: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class SourceSettings(Section):
    """One place transcripts live, e.g. ``kind = "claude-code"``, ``path = "~/.claude/projects"``."""

    kind: ConfiguredKind = Field(
        default="auto", description="Transcript format; `auto` detects it from each file's content"
    )
    path: str = Field(description="File or folder to read; `~` is expanded")


def _check_regex(pattern: str, what: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{what} is not a valid regular expression ({exc})") from exc


class IngestSettings(Section):
    """How transcripts are read and cleaned before anything is stored."""

    redact_patterns: dict[str, str] = Field(
        default_factory=dict, description="Extra secret patterns (name = regex) added to the built-in ones"
    )
    low_value_patterns: list[str] = Field(
        default_factory=list, description="Extra regexes for acknowledgements left out of chunking"
    )
    @field_validator("redact_patterns", "low_value_patterns")
    @classmethod
    def _valid_patterns(cls, value: dict[str, str] | list[str], info: ValidationInfo) -> dict[str, str] | list[str]:
        named = value.items() if isinstance(value, dict) else ((p, p) for p in value)
        for name, pattern in named:
            _check_regex(pattern, f"{info.field_name} {name!r}")
        return value

    max_string_bytes: int = Field(
        default=1 << 20, ge=1024,
        description="Longest JSON string (a message) read from a transcript, in bytes; the rest is cut with a "
                    "marker before parsing, so one huge paste cannot stall ingest (the file is still read whole)"
    )
    max_zip_entry_bytes: int = Field(
        default=4 << 30, ge=1,
        description="Largest uncompressed member of a zipped export that is read; a larger one is named in the "
                    "errors and skipped before it is inflated"
    )


# Similarities below are cosines of L2-normalized embeddings, used as thresholds in [0, 1].
class ChunkSettings(Section):
    """Splitting conversations into topic chunks."""

    boundary_method: Literal["learned", "valleys"] = Field(
        default="learned",
        description="No-model path: `learned` scores each gap between exchanges with weights fitted on public dialogues "
                    "with human topic boundaries (cosines, word overlap, opening and closing phrases); `valleys` is the "
                    "hand rule of boundary_similarity and boundary_depth",
    )
    boundary_threshold: float = Field(
        default=0.45, ge=0, le=1,
        description="No-model path, `learned`: the boundary probability a gap between exchanges needs to be cut (higher: "
                    "fewer, longer chunks); a conversation between people, with no replies, is read message by message "
                    "with a threshold of its own",
    )
    boundary_similarity: float = Field(
        default=0.40, ge=0, le=1,
        description="No-model path, `valleys`: cut between exchanges whose embedding cosine falls below this at a local minimum",
    )
    boundary_depth: float = Field(
        default=0.10, ge=0, le=2,
        description="No-model path, `valleys`: also cut where the cosine dips this far below the peaks on both sides (TextTiling depth)",
    )
    max_chunk_chars: int = Field(default=12_000, ge=1, description="A chunk never grows past this many characters")
    prompt_chars: int = Field(
        default=24_000, ge=1,
        description="Model path: characters of one conversation shown to the model per call (longer ones are cut into windows)",
    )
    max_output_tokens: int = Field(default=768, ge=1, description="Model path: tokens the model may generate per chunk call")
    repair_gap: int = Field(
        default=3, ge=0,
        description="Model path: uncovered messages between two chunks that are given to a neighbour (more: fall back)",
    )


class ClusterSettings(Section):
    """Assigning chunks to buckets (article topics)."""

    assign_similarity: float = Field(default=0.45, ge=0, le=1, description="Cosine to a bucket centroid needed to join it")
    group_similarity: float = Field(default=0.40, ge=0, le=1, description="Cosine linking leftover chunks into a new bucket")
    project_margin: float = Field(
        default=0.15, ge=0, le=1,
        description="Extra cosine a chunk needs to join a bucket of only other projects' chunks, or to group with another project's chunk",
    )
    min_support: int = Field(default=2, ge=1, description="Chunks needed before a proposed bucket is created")
    max_bucket_chunks: int = Field(
        default=60, ge=0,
        description="No-model path: chunks a bucket holds at most, so its article stays readable (a larger group is split "
                    "by a stricter similarity; a full bucket takes no more) (0: no limit)",
    )
    single_chunk_words: int = Field(
        default=150, ge=0,
        description="No-model path: words of discussion that make a chunk with no partner a topic of its own (0: never)",
    )
    batch_size: int = Field(default=4, ge=1, description="Model path: chunks classified per model call")
    chunk_prompt_chars: int = Field(default=1_500, ge=1, description="Model path: characters of each chunk shown to the model")
    max_output_tokens: int = Field(default=512, ge=1, description="Model path: tokens the model may generate per cluster call")


class SynthesizeSettings(Section):
    """Writing and updating articles."""

    max_attempts: int = Field(default=3, ge=1, description="Gate failures before a chunk is parked with a reason")
    sentences_per_chunk: int = Field(default=3, ge=1, description="No-model path: sentences extracted per chunk")
    chunks_per_call: int = Field(default=4, ge=1, description="Model path: new chunks integrated into an article per model call")
    chunk_prompt_chars: int = Field(default=3_000, ge=1, description="Model path: characters of each new chunk shown to the model")
    section_edit_words: int = Field(
        default=1_200, ge=1,
        description="Model path: past this many words an article is shown as an outline plus its most relevant sections",
    )
    max_output_tokens: int = Field(default=1_500, ge=1, description="Model path: tokens the model may generate per synthesize call")


class BudgetSettings(Section):
    """Limits per run; when reached, the run stops taking new units and finishes cleanly."""

    max_tokens: int = Field(default=400_000, gt=0, description="Model tokens (prompt + completion) per run")
    max_seconds: float = Field(default=4 * 3600, gt=0, description="Wall time per run for model-backed stages")


class EmbeddingSettings(Section):
    """The sentence-embedding model: the bundled MiniLM (offline, English-only), its static
    table, or any OpenAI-compatible embeddings server (``url``)."""

    model: str = Field(
        default="all-MiniLM-L6-v2-int8",
        description="Embedding model: all-MiniLM-L6-v2-int8 (bundled, English-only: MiniLM with its weights quantised to int8, ~1.6× less CPU per text than all-MiniLM-L6-v2, recall within 0.001), all-MiniLM-L6-v2 (the same model in fp32: a home indexed before int8 became the default keeps it until `memvault reindex`), all-MiniLM-L6-v2-static (distilled from it: ~120× less CPU per text, slightly lower recall), or with `url` the server's model name (e.g. bge-m3); stored with the index, so a change needs `memvault reindex`; chunks and topics use the int8 MiniLM whatever the model",
    )
    url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible embeddings server (POST <url>/embeddings), e.g. http://127.0.0.1:11434/v1 for Ollama; unset: the bundled model",
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the server's API key (sent as a Bearer token); optional"
    )
    timeout_s: float = Field(default=60.0, gt=0, description="Seconds one request to the embeddings server may take")
    retries: int = Field(default=3, ge=0, description="Retries of a failed request to the embeddings server (with backoff)")
    batch_size: int = Field(default=64, ge=1, description="Texts embedded per batch")
    # True when `model` is FP32_MODEL because the home's index predates the int8 default and
    # memvault.toml names no model (see keep_index_embedder); `memvault reindex` moves it.
    _kept_from_index: bool = PrivateAttr(default=False)

    @property
    def kept_from_index(self) -> bool:
        """Whether ``model`` is the fp32 MiniLM kept for an index built before the int8 default."""
        return self._kept_from_index

    @model_validator(mode="after")
    def _bundled_without_url(self) -> "EmbeddingSettings":
        # Without a server only the bundled models exist: a typo fails loudly here.
        if self.url is None and self.model not in BUNDLED_MODELS:
            raise ValueError(f"embeddings.model `{self.model}` is not a bundled model ({', '.join(BUNDLED_MODELS)}); "
                             "set embeddings.url to use it from an OpenAI-compatible server")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"embeddings.url `{self.url}` is not an http(s) URL")
        return self


class IndexSettings(Section):
    """The node index (LanceDB)."""

    uri: str | None = Field(
        default=None, description="LanceDB location; default <home>/.memvault/nodes.lance; s3:// URIs work"
    )
    similar_threshold: float = Field(default=0.72, ge=0, le=1, description="Cosine needed for a `similar` edge")
    max_similar: int = Field(default=3, ge=0, description="Similar edges per new node")
    recent_candidates: int = Field(default=120, ge=0, description="Most recent nodes considered for edges")
    fts_candidates: int = Field(default=20, ge=0, description="Nearest nodes by vector considered for each new node's edges")
    ann_threshold: int = Field(default=5_000, ge=1, description="Build an ANN index past this many nodes")
    ann_nprobes: int = Field(default=20, ge=1, description="IVF partitions searched per query once the ANN index exists")
    ann_refine_factor: int = Field(
        default=5, ge=1, description="ANN candidates re-ranked at full precision, as a multiple of the candidates asked"
    )
    context_turns: int = Field(
        default=1, ge=0,
        description="Turns before and after a message embedded and full-text indexed with it (0: the message alone)",
    )
    sentence_vectors: int = Field(
        default=4, ge=0,
        description="A turn's first sentences embedded one by one, besides the turn in its context (0: none; recall weighs the best)",
    )
    cleanup_after_hours: float = Field(
        default=24.0, ge=0, description="Maintenance deletes index versions older than this; readers keep working"
    )
    duplicate_similarity: float = Field(
        default=0.97, ge=0, le=1,
        description="Maintenance merges conversation nodes this similar with (near-)identical text",
    )
    cold_after_days: int | None = Field(
        default=None, ge=1,
        description="Maintenance drops vectors of conversation nodes older than this (full text stays); unset keeps all",
    )


class RecallSettings(Section):
    """Hybrid recall: candidates, weights and budgets (defaults from seed 000)."""

    # 100, not 40: deeper lists bring the turns a guess about someone needs (open-domain R@10
    # 0.43 → 0.47 left one conversation out, bench/README.md) for ~1.2–1.4× the recall time.
    top_k: int = Field(default=100, ge=1, description="Candidates taken from each of vector and full-text search")
    max_nodes: int = Field(default=8, ge=1, description="Nodes in a recall block")
    max_chars: int = Field(default=6_000, ge=1, description="Characters in a recall block")
    max_node_chars: int = Field(default=1_200, ge=1, description="Characters per node in a recall block")
    # 0.45 / 0.30 with the sentence cosine (w_sentence), not 0.35 / 0.40: a turn's best sentence
    # makes the cosine worth more (turn R@10 0.831 → 0.839 left one conversation out, bench/README.md).
    w_cos: float = Field(default=0.45, ge=0, description="Weight of vector cosine")
    w_lex: float = Field(default=0.30, ge=0, description="Weight of normalized full-text score")
    w_sentence: float = Field(
        default=0.5, ge=0, le=1,
        description="Share of a turn's cosine taken from its best sentence's (index.sentence_vectors), the rest from the turn in its context",
    )
    w_rrf: float = Field(default=0.25, ge=0, description="Weight of reciprocal-rank fusion")
    rrf_k: int = Field(default=10, ge=0, description="RRF constant")
    parent_damping: float = Field(default=0.55, ge=0, le=1, description="Share of a hit's score lifted to its parent")
    neighbour_damping: float = Field(
        default=0.55, ge=0, le=1, description="Share (× similarity) lifted to a similar neighbour"
    )
    child_damping: float = Field(
        default=0.55, ge=0, le=1, description="Share of an exchange hit's score lifted to each of its messages"
    )
    sibling_damping: float = Field(
        default=0.5, ge=0, le=1, description="Share of a message hit's score lifted to the other messages of its exchange"
    )
    reply_damping: float = Field(
        default=1.0, ge=0, le=1,
        description="Share of a message hit's score lifted to the next turn of its conversation (its reply), "
                    "when the hit asks a question",
    )
    reply_statement_damping: float = Field(
        default=0.5, ge=0, le=1,
        description="Share of a message hit's score lifted to its reply when the hit asks no question (no '?')",
    )
    w_exact: float = Field(
        default=0.1, ge=0,
        description="Weight of the share of the query's exact tokens (numbers, ids, names) a hit contains",
    )
    exact_max_share: float = Field(
        default=0.25, ge=0, le=1, description="An exact token found in more than this share of the hits is ignored"
    )
    w_date: float = Field(
        default=0.2, ge=0, description="Prior of a node dated inside the day, month or year the query names"
    )
    date_slack_days: float = Field(
        default=14, ge=0, description="A node dated up to this many days after the named period still gets the date prior"
    )
    w_when: float = Field(
        default=0.15, ge=0,
        description="Prior of a node that dates something (yesterday, last week, a month) when the query asks when",
    )
    diversity: float = Field(default=0.88, ge=0, le=1, description="Drop candidates this similar to a picked node")
    hop_k: int = Field(
        default=0, ge=0,
        description="Second hop: candidates from a full-text search for the rare terms of the first hop's best hits (0: none)",
    )
    hop_seeds: int = Field(default=3, ge=1, description="The first hop's best hits whose rare terms the second hop seeks")
    hop_terms: int = Field(default=8, ge=1, description="Rare terms taken from the second hop's seeds, at most")
    hop_max_share: float = Field(
        default=0.1, ge=0, le=1, description="A seed's term found in more than this share of the hits is not rare: not taken"
    )
    w_hop: float = Field(
        default=0.0, ge=0, description="Weight of the share of the first hop's rare terms (names, places, numbers) a node shares"
    )
    hop_full: int = Field(default=2, ge=1, description="Rare terms a node must share to get the whole hop weight")
    w_session: float = Field(
        default=0.0, ge=0,
        description="Weight of a node's session support: the bases of its session's best hits summed, over the best session's",
    )
    session_top: int = Field(default=3, ge=1, description="Hits of a session whose bases its support sums")
    w_cover: float = Field(
        default=0.0, ge=0, description="Weight of the idf share of the query's words a node holds that the best few hits lack"
    )
    cover_seeds: int = Field(default=3, ge=1, description="The best hits whose query words a node completes")
    w_speaker: float = Field(default=0.12, ge=0, description="Weight of a turn spoken by a person the query names")
    w_content: float = Field(
        default=0.2, ge=0,
        description="Prior of a node by its content words (not function words, not its speaker's name): a reply of thanks gets little of it",
    )
    content_full: int = Field(default=12, ge=1, description="Content words a node needs for the whole content prior")
    guess_shift: float = Field(
        default=0.3, ge=0,
        description="Moved from w_lex to w_cos when the query asks for a guess about someone it names (\"Would Ann …\"): its evidence seldom shares its words",
    )


class ScheduleSettings(Section):
    """When the nightly deployment runs."""

    at: time = Field(default=time(3, 0), description="Local time of the nightly run, HH:MM (24-hour)")
    timezone: str | None = Field(default=None, description="IANA time zone; default the machine's")
    api_url: str = Field(
        default="http://127.0.0.1:4200/api", description="Prefect server the scheduled server, worker and deployments use"
    )

    @field_validator("at", mode="before")
    @classmethod
    def _hours_minutes(cls, value: Any) -> Any:
        # "3:00" was accepted before `at` was a time; pydantic alone wants "03:00".
        if isinstance(value, str) and len(value.strip()) == 4 and value.strip()[1] == ":":
            return "0" + value.strip()
        return value

    @field_validator("at")
    @classmethod
    def _whole_minutes(cls, value: time) -> time:
        if value.second or value.microsecond or value.tzinfo is not None:
            raise ValueError("use HH:MM, a local time in whole minutes (the time zone is `timezone`)")
        return value


# The prompt gate's thresholds are written once, in the gate (the hook imports it without pydantic).
_GATE = GateParams()


class LiveSettings(Section):
    """The live path: hook capture, the spool drainer, prompt-time recall and scoped recall."""

    drain_wait_s: float = Field(
        ge=0, default=6 * 3600.0, description="How long a drainer waits for the writer lock (e.g. behind the nightly run) before leaving the spool for the next one"
    )
    watch_poll_s: float = Field(gt=0, default=2.0, description="`memvault watch`: seconds between scans when polling (no file-system notifications)")
    serve_drain_s: float = Field(gt=0, default=2.0, description="`memvault serve`: seconds between checks of the spool (it drains with its warm embedder); a new entry wakes it at once through file-system notifications, so this check is the fallback where those do not work")
    prompt_max_chars: int = Field(ge=200, default=1_500, description="prompt-recall: most characters in the injected block, frame and header included")
    # 40, not recall.top_k's 100: the gate's threshold was chosen on 40 candidates a list, and
    # each prompt pays for every candidate it scores (100 took the warm hook past 4× `pass`).
    prompt_top_k: int = Field(ge=1, default=40, description="prompt-recall: candidates taken from each of vector and full-text search (recall.top_k for the other doors)")
    prompt_min_words: int = Field(ge=1, default=_GATE.min_words, description="prompt-recall: content words a prompt needs before memory is looked up (fewer: a trivial prompt, nothing injected)")
    prompt_coverage_weight: float = Field(
        ge=0, default=_GATE.w_coverage, description="prompt-recall: weight of coverage (the share of the prompt's IDF mass in this home that the best evidence unit holds; a date word counts when the unit's date matches) in the evidence score")
    prompt_top_weight: float = Field(
        ge=0, default=_GATE.w_top, description="prompt-recall: weight of the top cosine (the closest node of the home, any kind, outside the prompt's own session) in the evidence score")
    prompt_min_evidence: float = Field(
        ge=0, default=_GATE.min_evidence, description="prompt-recall: the evidence score a block needs: unit cosine + prompt_top_weight × top cosine + prompt_coverage_weight × coverage")
    prompt_min_cos: float = Field(ge=0, le=1, default=_GATE.min_cos, description="prompt-recall: the least cosine of the best evidence unit (0: the evidence score alone decides)")
    prompt_min_margin: float = Field(
        ge=-1, le=1, default=_GATE.min_margin, description="prompt-recall: how far the best unit's cosine must stand above the prompt's background (mean cosine of its vector hits from rank 10 on); -1: not required")
    daemon_idle_s: float = Field(gt=0, default=1_800.0, description="The hook daemon (started by the first hook) exits after this many seconds without a request")
    prompt_timeout_s: float = Field(gt=0, default=SERVE_TIMEOUT_S, description="prompt-recall: HTTP timeout when asking a running `memvault serve`")
    project_boost: float = Field(
        ge=0, default=0.04, description="Prior added to nodes of the project a recall is made from (its cwd); 0 turns it off"
    )


class McpSettings(Section):
    """The MCP server (`memvault mcp`)."""

    allow_write: bool = Field(default=False, description="Offer the write tool `remember` (off: agents can only read)")


class HubSettings(Section):
    """One memory for several machines: a client's `[hub]` (where captures, recall, search and
    notes go) and a hub's own limits. Written by `memvault agent-setup … --hub URL --token-file FILE`."""

    url: str | None = Field(default=None, description="Base URL of the hub (`memvault serve --token-file` on the machine that keeps the memory); set: this home is a client")
    token_file: str | None = Field(default=None, description="File holding the hub's bearer token (copied from the hub; mode 0600)")
    machine: str | None = Field(default=None, description="This machine's name on the hub (default: the host name)")
    insecure: bool = Field(default=False, description="Allow a plain http:// hub URL that is not on loopback (the token and your memory cross the network in clear)")
    timeout_s: float = Field(gt=0, default=10.0, description="Client: HTTP timeout for a call to the hub, in seconds")
    max_capture_bytes: int = Field(ge=1024, default=64 * 1024 * 1024, description="Hub: largest capture request body it accepts (a bigger one is refused with 413)")

    @field_validator("url")
    @classmethod
    def _safe_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from memvault.live.hub_wire import check_url

        check_url(value, insecure=True)  # the scheme and host; loopback vs --insecure is checked on use
        return value.strip().rstrip("/")


class Settings(BaseSettings):
    """Root of every memvault setting."""

    # extra="ignore": the environment holds MEMVAULT_* variables that are not settings (e.g.
    # MEMVAULT_UNIT_DIR for `memvault schedule`); memvault.toml's top level is checked apart.
    model_config = SettingsConfigDict(
        env_prefix="MEMVAULT_", env_nested_delimiter="__", extra="ignore", validate_default=True
    )

    home: Path = Field(default=Path("~/memvault"), description="The memory home (MEMVAULT_HOME or --home)")
    engine: EngineName = Field(default="auto", description="Model engine: auto, mlx, openai or none")
    lock_timeout_s: float = Field(default=5.0, ge=0, description="How long a writer waits for the lock, in seconds")
    sources: list[SourceSettings] = Field(default_factory=list, description="Transcript locations")
    model: EngineSettings = Field(default_factory=EngineSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    chunk: ChunkSettings = Field(default_factory=ChunkSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    synthesize: SynthesizeSettings = Field(default_factory=SynthesizeSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    live: LiveSettings = Field(default_factory=LiveSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    hub: HubSettings = Field(default_factory=HubSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: CLI flags (init) > environment > memvault.toml (the file load_settings is
        # reading, none otherwise) > defaults. No .env file, no secrets folder.
        return (init_settings, env_settings, InitSettingsSource(settings_cls, _TOML_DATA.get() or {}))

    @property
    def state_dir(self) -> Path:
        return self.home / ".memvault"

    @property
    def ledger_path(self) -> Path:
        return self.state_dir / "ledger.duckdb"

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"


def resolve_home(home: str | Path | None = None) -> Path:
    """The home from a flag, else MEMVAULT_HOME, else ~/memvault (absolute, ~ expanded)."""
    raw = home if home is not None else os.environ.get("MEMVAULT_HOME", "~/memvault")
    return Path(raw).expanduser().resolve()


def load_settings(home: str | Path | None = None, **overrides: Any) -> Settings:
    """Load settings for a home; ``overrides`` are CLI flags (highest precedence).

    Nested overrides use dicts: ``load_settings(recall={"max_nodes": 3})``. A setting that is
    unknown, of the wrong type or out of range raises ConfigError naming it and where it came
    from (the file, an environment variable or a flag).
    """
    resolved = resolve_home(home)
    toml = resolved / "memvault.toml"
    data = read_toml(toml) if toml.is_file() else {}
    problems = unknown_top_level_keys(data, Settings, toml)

    clean = {k: v for k, v in overrides.items() if v is not None}
    reading = _TOML_DATA.set(data)
    try:
        loaded = Settings(home=resolved, **clean)
    except ValidationError as exc:
        raise ConfigError(combine(problems + describe_errors(exc, Settings, toml=toml, data=data, flags=clean))) from None
    finally:
        _TOML_DATA.reset(reading)
    if problems:
        raise ConfigError(combine(problems))
    return keep_index_embedder(loaded)


def keep_index_embedder(settings: Settings) -> Settings:
    """``settings`` with the fp32 MiniLM as embedder when the home's live index was built
    before int8 became the default (it has no INDEX_EMBEDDER_FILE) and neither memvault.toml
    nor the environment names a model: the home keeps working with the vectors it has
    (indexing, recall, live capture) until `memvault reindex` moves it to the default —
    without this, an upgrade would leave new conversations unindexed until a reindex nobody
    asked for. Two stat calls: cheap enough for every hook."""
    e = settings.embeddings
    if e.url or "model" in e.model_fields_set or e.model == FP32_MODEL:
        return settings
    state = settings.state_dir
    if (state / INDEX_EMBEDDER_FILE).is_file():
        return settings
    configured = Path(settings.index.uri).expanduser() if settings.index.uri and "://" not in settings.index.uri else None
    if not ((state / INDEX_POINTER).is_file() or (state / DEFAULT_INDEX).is_dir() or (configured and configured.is_dir())):
        return settings  # no index yet: it will be made with the default
    kept = e.model_copy(update={"model": FP32_MODEL})
    kept._kept_from_index = True
    return settings.model_copy(update={"embeddings": kept})


def default_embeddings(settings: Settings) -> Settings:
    """``settings`` with the default embedder again where keep_index_embedder kept the fp32
    one: what `memvault reindex` builds the new index with."""
    e = settings.embeddings
    if not e.kept_from_index:
        return settings
    return settings.model_copy(update={"embeddings": e.model_copy(update={"model": EmbeddingSettings().model})})
