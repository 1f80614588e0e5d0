"""The run report: one JSON file per run under .memvault/runs/, and its Markdown rendering."""

import json
from pathlib import Path
from typing import Any

from memvault.files import atomic_write_text


def overall_status(stages: dict[str, dict[str, Any]]) -> str:
    if any(s.get("status") == "failed" for s in stages.values()):
        return "failed"
    if any(s.get("errors") for s in stages.values()):
        return "completed_with_errors"
    return "completed"


def build_report(run_id: str, engine: str, engine_reason: str, stages: dict[str, dict[str, Any]],
                 touched: dict[str, str], rejected: dict[str, list[str]], started: str, finished: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "status": overall_status(stages),
        "engine": engine,
        "engine_reason": engine_reason,
        "started_at": started,
        "finished_at": finished,
        "stages": stages,
        "articles_created": sorted(s for s, k in touched.items() if k == "created"),
        "articles_updated": sorted(s for s, k in touched.items() if k == "updated"),
        "articles_rejected": [{"article": s, "reasons": r} for s, r in sorted(rejected.items())],
        "tokens": sum(int(s.get("tokens", 0)) for s in stages.values()),
    }


def save_report(runs_dir: Path, report: dict[str, Any]) -> Path:
    path = runs_dir / f"{report['run_id']}.json"
    atomic_write_text(path, json.dumps(report, indent=2, default=str) + "\n")
    return path


def latest_report(runs_dir: Path) -> dict[str, Any] | None:
    files = sorted(runs_dir.glob("*.json"), key=lambda p: p.stat().st_mtime) if runs_dir.is_dir() else []
    return json.loads(files[-1].read_text()) if files else None


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# memvault run {report['run_id']}", "",
             f"**Status:** {report['status']} · **engine:** {report['engine']} ({report.get('engine_reason', '')})", "",
             "| stage | status | seconds | counts |", "|---|---|---|---|"]
    # The table stays narrow (a few counts per stage); every count is in "All counts" below.
    for name, s in report["stages"].items():
        lines.append(f"| {name} | {s.get('status')} | {s.get('seconds', 0):.1f} | {key_counts(name, s)} |")
    lines += ["", "**All counts:**"]
    for name, s in report["stages"].items():
        counts = ", ".join(f"{k}={v}" for k, v in s.items()
                           if k not in ("status", "seconds", "errors") and not isinstance(v, (dict, list)))
        lines.append(f"- {name}: {counts or '-'}")
    lines += ["", f"**Created:** {', '.join(report['articles_created']) or 'none'}",
              f"**Updated:** {', '.join(report['articles_updated']) or 'none'}"]
    if report["articles_rejected"]:
        lines.append("**Rejected:**")
        lines += [f"- {r['article']}: {'; '.join(r['reasons'])}" for r in report["articles_rejected"]]
    left = report.get("backlog") or {}
    if left.get("conversations_left") or left.get("chunks_unassigned") or left.get("chunks_pending"):
        runs = left.get("estimated_runs_to_finish")
        lines += ["", f"**Left for later runs:** {left.get('conversations_left', 0)} conversation(s) to chunk, "
                  f"{left.get('chunks_unassigned', 0)} chunk(s) to cluster, {left.get('chunks_pending', 0)} chunk(s) "
                  f"to synthesize — " + (f"about {runs} more run(s) at this run's rate" if runs is not None
                                          else "no estimate yet: this run made no progress on it")]
    budget = report.get("budget") or {}
    if budget:
        lines.append(f"\n**Budget:** {budget.get('tokens', 0)} of {budget.get('max_tokens')} tokens, "
                     f"{budget.get('calls', 0)} model call(s)" +
                     (f"; stopped: {budget['stopped']}" if budget.get("stopped") else ""))
    calls = budget.get("model_calls") or {}
    if calls:
        lines += ["", "| model calls | calls | prompt tokens | prompt tokens per call | reply tokens |",
                  "|---|---|---|---|---|"]
        lines += [f"| {stage} | {c['calls']} | {c['prompt_tokens']} | {c['prompt_tokens_per_call']} | "
                  f"{c['reply_tokens']} |" for stage, c in calls.items()]
    errors = report["stages"].get("ingest", {}).get("errors") or []
    if errors:
        lines += ["", f"**Ingest errors ({len(errors)}):**"]
        lines += [f"- {e['file']}:{e.get('line') or '-'}: {e['error']}" for e in errors[:50]]
    lines.append(f"\nTokens: {report['tokens']}")
    return "\n".join(lines) + "\n"


# The two or three counts that say what a stage did (the stage-count table shows only these).
KEY_COUNTS: dict[str, tuple[str, ...]] = {
    "ingest": ("conversations_new", "messages_new", "errors"),
    "chunk": ("conversations", "chunks_new", "waiting"),
    "cluster": ("assigned", "buckets_new", "waiting"),
    "synthesize": ("created", "updated", "rejected"),
    "wikify": ("changed", "kept"),
    "normalize": ("changed", "dangling", "footnotes_dropped"),
    "changelog": ("committed",),
    "index": ("nodes_written", "nodes_deleted", "pending"),
}


def key_counts(stage: str, result: dict[str, Any]) -> str:
    """``result``'s key counts as one short cell: `conversations_new 11 · messages_new 230 · errors 2`.

    Lists count as their length; a failed stage shows its error instead; a commit its short sha.
    """
    if result.get("status") == "failed":
        return str(result.get("error", "failed"))[:120]
    parts = []
    for key in KEY_COUNTS.get(stage, ()):
        if key not in result:
            continue
        value = result[key]
        if isinstance(value, (list, dict)):
            value = len(value)
        elif key == "committed":
            value = str(value)[:8] if value else "nothing"
        parts.append(f"{key} {value}")
    return " · ".join(parts)
