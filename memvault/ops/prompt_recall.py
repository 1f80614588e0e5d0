"""`memvault prompt-recall`: a UserPromptSubmit hook that injects memory only when it helps.

For the prompt in the hook payload it recalls, and prints the ``<memory-recall>`` block only
when the prompt is close in meaning to something recalled — the best cosine similarity between
the prompt and a hit clears ``live.prompt_threshold`` — cut to ``live.prompt_max_tokens``;
otherwise it prints nothing (an unrelated prompt costs the agent no context). It asks a
running `memvault serve` over loopback when there is one (warm model: tens of milliseconds)
and recalls in process otherwise. It never fails the agent: trouble goes to
``.memvault/live.log`` and the hook prints nothing. The block it prints is stripped by ingest
(``memvault.noise``) when the transcript comes back, like every block memvault injects.
"""

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from memvault import spool

CHARS_PER_TOKEN = 4  # a conservative English average; the budget is a bound, not a count


def prompt_block(service: Any, prompt: str, cwd: str | None = None) -> dict[str, Any]:
    """``{"block", "best", "threshold", "hits"}`` for ``prompt`` on a MemoryService; ``block``
    is empty when the best cosine of a hit (``best``) is below the threshold, or the prompt is empty.

    Cosine, not the fused score: the fused score ranks the hits of one query against each
    other (its full-text part is scaled by the query's best match), so every prompt's top hit
    looks strong; how close the prompt is in meaning to a node is what says whether the
    memory is about it at all.
    """
    live = service.settings.live
    if not prompt or not prompt.strip():
        return {"block": "", "best": None, "threshold": live.prompt_threshold, "hits": 0}
    result = service.recall(prompt, max_chars=max(live.prompt_max_tokens * CHARS_PER_TOKEN - 400, 400), cwd=cwd)
    best = max((float(h["explain"].get("cos") or 0.0) for h in result["hits"]), default=None)
    clears = best is not None and best >= live.prompt_threshold
    return {"block": result["block"] if clears else "", "best": best, "threshold": live.prompt_threshold,
            "hits": len(result["hits"])}


def _via_serve(info: dict[str, Any], prompt: str, cwd: str | None, timeout_s: float) -> dict[str, Any]:
    query = urllib.parse.urlencode({"q": prompt, **({"cwd": cwd} if cwd else {})})
    host = info.get("host") or "127.0.0.1"
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{int(info['port'])}/prompt-recall?{query}"
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - loopback, our own server
        answer: dict[str, Any] = json.loads(resp.read().decode("utf-8"))
        return answer


def _via_hub(home: Path, prompt: str, cwd: str | None) -> tuple[str, str] | None:
    """A hub client asks its hub (None for a home with its own memory); trouble is logged, never raised."""
    from memvault.hub_wire import HubError, hub_table

    if hub_table(home) is None:
        return None
    from memvault.errors import MemvaultError
    from memvault.hub_push import client_hub

    try:
        hub = client_hub(home)
        assert hub is not None
        return str(hub.post("/v1/prompt-recall", {"prompt": prompt, "cwd": cwd}).get("block") or ""), "hub"
    except (HubError, MemvaultError) as exc:
        spool.log_line(home / ".memvault", f"prompt-recall: {exc} — nothing injected")
        return "", "error"


def prompt_recall(home: Path, raw: str, timeout_s: float | None = None) -> tuple[str, str]:
    """What the hook prints for the payload ``raw``, and how it was answered
    (``serve``, ``direct``, ``empty`` or ``error``); never raises."""
    state = home / ".memvault"
    try:
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("hook payload is not a JSON object")
        prompt = payload.get("prompt")
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return "", "empty"
    except ValueError as exc:
        spool.log_line(state, f"prompt-recall: {exc} — nothing injected")
        return "", "error"
    if (hub := _via_hub(home, prompt, cwd)) is not None:
        return hub
    info = spool.serve_info(state) if state.is_dir() else None
    if info is not None:
        try:
            # The server publishes its `live.prompt_timeout_s`: this path never loads settings.
            wait = timeout_s if timeout_s is not None else float(info.get("prompt_timeout_s") or 0.8)
            return _via_serve(info, prompt, cwd, wait).get("block") or "", "serve"
        except (OSError, ValueError) as exc:
            spool.log_line(state, f"prompt-recall: `memvault serve` (pid {info.get('pid')}) did not answer ({exc}); "
                                  "recalling in process")
    try:
        from memvault.errors import MemvaultError
        from memvault.ops.home import require_home
        from memvault.ops.memory import MemoryService
        from memvault.settings import load_settings

        settings = load_settings(home)
        require_home(settings.home)
        from memvault.embeddings.select import query_embedder

        service = MemoryService(settings, query_embedder(settings))
        return prompt_block(service, prompt, cwd)["block"], "direct"
    except MemvaultError as exc:
        spool.log_line(state, f"prompt-recall: {exc} — nothing injected")
        return "", "error"
