"""The `recall` flow: an ad-hoc recall from the Prefect UI, published as a Markdown artifact.

Agents never come through here (the CLI, MCP and HTTP doors call `MemoryService` directly
and answer in milliseconds); this flow is for a person who wants to ask memory something
from the UI, or a deployment that records what memory says about a subject over time.
Read-only: it takes no writer lock and never opens the ledger.
"""

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, Field

from memvault.ops.home import require_home
from memvault.ops.memory import MemoryService
from memvault.ops.results import Recall
from memvault.config.settings import load_settings

ARTIFACT_KEY = "memvault-recall"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def recall_markdown(result: Recall) -> str:
    """The artifact: the block verbatim in a code fence (never rendered as HTML), then the hits."""
    block = result["block"]
    fence = "`" * max(3, _longest_backtick_run(block) + 1)  # longer than any run inside: cannot close
    lines = [f"# Recall: {_cell(result['query'])}", "", f"{len(result['hits'])} hit(s).", "",
             f"{fence}text", block, fence, "", "| # | score | path | cite |", "|---|---|---|---|"]
    for n, hit in enumerate(result["hits"], start=1):
        lines.append(f"| {n} | {hit['score']:.4f} | {_cell(hit['path'])} | {_cell(hit['cite'])} |")
    return "\n".join(lines) + "\n"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


class RecallOptions(BaseModel):
    """Parameters of one recall (validated by Prefect from the UI, a deployment or Python)."""

    query: str = Field(min_length=1, description="What to remember")
    home: str | None = Field(default=None, description="Memory home; default MEMVAULT_HOME or ~/memvault")
    max_nodes: int | None = Field(default=None, ge=1, le=50, description="Most nodes in the block")
    max_chars: int | None = Field(default=None, ge=200, le=50_000, description="Most characters in the block")
    max_node_chars: int | None = Field(default=None, ge=100, le=10_000, description="Most characters per node")


@flow(name="recall", log_prints=False)
def recall(options: RecallOptions) -> Recall:
    """Recall ``options.query`` from the memory home; the block and hits also go to a Markdown artifact."""
    settings = load_settings(options.home)
    require_home(settings.home)
    result = MemoryService(settings).recall(options.query, max_nodes=options.max_nodes, max_chars=options.max_chars,
                                            max_node_chars=options.max_node_chars)
    get_run_logger().info("recall %r: %d hit(s)", options.query, len(result["hits"]))
    create_markdown_artifact(key=ARTIFACT_KEY, markdown=recall_markdown(result),
                             description=f"memvault recall: {options.query[:80]}")
    return result
