"""Per-run budgets of model tokens and wall time, per-stage accounting, and backlog estimates.

A stage asks `budget.exhausted()` before it takes each new unit (a conversation, a batch of
chunks, an article); once the budget is spent, model-backed stages take no new units and the
run finishes cleanly — the rest waits for the next run. The clock starts when the first
model-backed stage first asks, so ingest time does not count against it.
"""

import math
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any

from typing_extensions import TypedDict

from memvault.engines.base import Completion
from memvault.errors import UsageError


class Budget:
    """Tokens and seconds spent this run, against the configured limits."""

    def __init__(self, max_tokens: int, max_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        self._clock = clock
        self._start: float | None = None
        self.tokens = 0
        self.calls = 0
        self.stopped: str | None = None
        self.per_stage: dict[str, dict[str, float]] = {}

    def _elapsed(self) -> float:
        if self._start is None:
            self._start = self._clock()
        return self._clock() - self._start

    def charge(self, stage: str, completions: Iterable[Completion]) -> None:
        """Count the calls and tokens of one unit's model calls against `stage`."""
        entry = self.per_stage.setdefault(stage, {"calls": 0, "tokens": 0, "model_seconds": 0.0})
        for done in completions:
            spent = done.prompt_tokens + done.completion_tokens
            self.calls += 1
            self.tokens += spent
            entry["calls"] += 1
            entry["tokens"] += spent
            entry["model_seconds"] += done.seconds
            # Prompt and reply apart: a long prompt per call is what a small model pays for most.
            entry["prompt_tokens"] = entry.get("prompt_tokens", 0) + done.prompt_tokens
            entry["reply_tokens"] = entry.get("reply_tokens", 0) + done.completion_tokens

    def exhausted(self) -> str | None:
        """Why no new unit may start (and remember it), or None while budget remains."""
        if self.stopped is None:
            if self.tokens >= self.max_tokens:
                self.stopped = f"token budget reached ({self.tokens} of {self.max_tokens} tokens)"
            elif self._elapsed() >= self.max_seconds:
                self.stopped = f"time budget reached ({self.max_seconds:g} s)"
        return self.stopped

    def stage_counts(self, stage: str) -> dict[str, Any]:
        """`calls` and `tokens` for the stage result (Ledger.record_stage stores both)."""
        entry = self.per_stage.get(stage, {"calls": 0, "tokens": 0, "model_seconds": 0.0})
        return {"calls": int(entry["calls"]), "tokens": int(entry["tokens"]),
                "model_seconds": round(entry["model_seconds"], 3)}

    def model_calls(self) -> dict[str, dict[str, Any]]:
        """Per stage: calls, prompt tokens (total and mean per call) and reply tokens."""
        out = {}
        for stage, entry in self.per_stage.items():
            calls, prompt = int(entry["calls"]), int(entry.get("prompt_tokens", 0))
            out[stage] = {"calls": calls, "prompt_tokens": prompt,
                          "prompt_tokens_per_call": round(prompt / calls) if calls else 0,
                          "reply_tokens": int(entry.get("reply_tokens", 0))}
        return out

    def summary(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "max_seconds": self.max_seconds, "tokens": self.tokens,
                "calls": self.calls, "stopped": self.stopped, "model_calls": self.model_calls()}


class StageProgress(TypedDict):
    left: int
    done: int
    units_per_second: float | None


class Progress(TypedDict):
    stages: dict[str, StageProgress]
    estimated_runs_to_finish: int | None


def progress(left: dict[str, int], done: dict[str, int], seconds: dict[str, float]) -> Progress:
    """How much is left per stage, the rate this run, and the runs needed at that rate.

    `left[stage]` units wait, `done[stage]` were done this run in `seconds[stage]`. A stage
    with work left and nothing done this run makes the estimate unknown (None).
    """
    stages: dict[str, StageProgress] = {}
    runs: list[float] = []
    unknown = False
    for stage in left:
        n_left, n_done, secs = left[stage], done.get(stage, 0), seconds.get(stage, 0.0)
        rate = n_done / secs if secs > 0 and n_done else None
        stages[stage] = {"left": n_left, "done": n_done, "units_per_second": round(rate, 3) if rate else None}
        if n_left:
            if n_done:
                runs.append(n_left / n_done)
            else:
                unknown = True
    estimate = None if unknown else (math.ceil(max(runs)) if runs else 0)
    return {"stages": stages, "estimated_runs_to_finish": estimate}


def estimate_calls(*, engine: str, conversations: int, chunks_per_conversation: float, unassigned: int,
                   pending_by_bucket: dict[str, int], cluster_batch: int, synth_batch: int) -> dict[str, int]:
    """Model calls a run would make (first attempts; a retry after invalid output adds one)."""
    if engine == "none":
        return {"chunk": 0, "cluster": 0, "synthesize": 0, "total": 0}
    new_chunks = math.ceil(conversations * chunks_per_conversation)
    cluster = math.ceil((unassigned + new_chunks) / max(1, cluster_batch))
    synth = sum(math.ceil(n / max(1, synth_batch)) for n in pending_by_bucket.values())
    # New chunks land in buckets not known yet: assume they spread like one batch per bucket-sized group.
    synth += math.ceil(new_chunks / max(1, synth_batch))
    return {"chunk": conversations, "cluster": cluster, "synthesize": synth,
            "total": conversations + cluster + synth}


def parse_since(value: str | None) -> datetime | None:
    """`--since` as a UTC datetime: a date (`2026-05-01`) or an ISO time; UsageError otherwise."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise UsageError(f"--since {value!r} is not a date — use YYYY-MM-DD or an ISO time such as "
                         "2026-05-01T08:00") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
