"""`memvault prompt-recall`: a UserPromptSubmit hook that injects memory only when it helps.

The hook path (``prompt_recall``) reads the hook JSON, cuts the prompt to a bounded query and
drops a trivial prompt ("thanks", "ok", a slash command) before anything else, then asks the
home's warm process — the hook daemon (``memvault.live.hookd_client``, started on first use) or a
running `memvault serve` — and answers in process only when neither can. It never fails the
agent: trouble is one line in ``.memvault/live.log`` (never the payload) and nothing printed.

The decision (``evaluate``) weighs what recall found (``measure``, then
``memvault.live.prompt_gate.decide``): the best evidence unit's cosine, the home's top cosine,
and how much of the prompt's information (its rare words, its dates) the unit holds; the
cosine over the prompt's background and whether both lists agree are shown too. The turns of
the session the prompt is typed in are left out. The block (``memvault.recall.evidence``) shows
the matching turns with their dates.
Standard library only at import: the heavy modules load inside ``evaluate``.
"""

import json
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memvault.live import hookd_client
from memvault.live import spool
from memvault.live.prompt_gate import (SERVE_TIMEOUT_S, GateParams, Signals, bounded_query, content_words, coverage,
                                  decide, explain, trivial_reason)

if TYPE_CHECKING:
    from datetime import datetime

    from memvault.embeddings.base import Embedder
    from memvault.ops.memory import MemoryService
    from memvault.ops.results import PromptRecallAnswer
    from memvault.recall.evidence import Shape

STDIN_MAX_BYTES = 8 << 20  # a hook payload past this is not parsed at all: nothing injected
DF_REFRESH_S = 600.0  # document frequencies are recounted at most this often, and when the index grew
BACKGROUND_FROM = 10  # the vector list from this rank on is the prompt's background
AGREE_DEPTH = 10  # both lists put a unit this high: they agree on it
_DF: "weakref.WeakKeyDictionary[Any, tuple[float, int, dict[str, int], int]]" = weakref.WeakKeyDictionary()
_GATE: "weakref.WeakKeyDictionary[Any, dict[str, Embedder | None]]" = weakref.WeakKeyDictionary()
UNIT_TEXT_MAX = 2_000  # characters of a unit the bundled MiniLM reads (it keeps 256 tokens anyway)
_QUICK: "weakref.WeakKeyDictionary[Any, Embedder]" = weakref.WeakKeyDictionary()
_RESTING: "weakref.WeakKeyDictionary[Any, float]" = weakref.WeakKeyDictionary()
QUERY_TIMEOUT_S = 2.0  # the hook's one try at the home's embeddings server for a prompt
SERVER_REST_S = 60.0  # after it failed, prompts are recalled by full text for this long


class PromptAnswer(NamedTuple):
    """What the hook injects (``block``, empty for nothing) and why."""

    block: str
    injected: bool
    reasons: list[str]
    signals: Signals | None = None

    def explain(self) -> str:
        return explain(self.injected, self.reasons, len(self.block))

    def as_dict(self) -> "PromptRecallAnswer":
        s = self.signals
        return {"block": self.block, "injected": self.injected, "reasons": self.reasons,
                "signals": None if s is None else {"words": list(s.words), "idf_mass": round(s.idf_mass, 3),
                                                   "coverage": round(s.coverage, 3), "cos": round(s.cos, 4),
                                                   "background": round(s.background, 4), "margin": round(s.margin, 4),
                                                   "top_cos": round(s.top_cos, 4),
                                                   "agree": s.agree, "in_project": s.in_project}}


def gate_params(live: Any) -> GateParams:
    """The decision's thresholds from the ``[live]`` settings."""
    return GateParams(min_words=live.prompt_min_words, w_coverage=live.prompt_coverage_weight,
                      min_evidence=live.prompt_min_evidence, min_cos=live.prompt_min_cos,
                      min_margin=live.prompt_min_margin, w_top=live.prompt_top_weight)


def session_doc(session_id: str | None, source: str = "claude-code") -> str | None:
    """The node-index document of the session a prompt is typed in (its own captured turns)."""
    if not session_id:
        return None
    from memvault.ids import conv_ref, conversation_id

    return conv_ref(conversation_id(source, session_id))


def _document_frequencies(service: "MemoryService") -> tuple[dict[str, int], int]:
    """Per content word, how many nodes of the home hold it, and how many nodes there are."""
    now = time.monotonic()
    cached = _DF.get(service)
    if cached is not None and now - cached[0] < DF_REFRESH_S:
        return cached[2], cached[3]
    count = service.nodes.count()
    if cached is not None and cached[1] == count:
        _DF[service] = (now, count, cached[2], cached[3])
        return cached[2], cached[3]
    df: dict[str, int] = {}
    texts = service.nodes.texts()
    for text in texts:
        for w in content_words(text):
            df[w] = df.get(w, 0) + 1
    _DF[service] = (now, count, df, len(texts))
    return df, len(texts)


def evaluate(service: "MemoryService", prompt: str, cwd: str | None = None, session_id: str | None = None,
             params: GateParams | None = None, max_chars: int | None = None, shape: "Shape | None" = None,
             found: tuple[Any, ...] | None = None) -> PromptAnswer:
    """Decide for ``prompt`` and shape its block (empty when nothing should be injected).
    ``found``: ``service.scored_candidates``' answer for this prompt, when already at hand (the
    bench weighs many decisions and shapes on one recall)."""
    from memvault.recall.evidence import merge, passage_for, render_prompt_block

    live = service.settings.live
    params = params or gate_params(live)
    if shape is None:
        from memvault.recall.evidence import Shape

        shape = Shape()  # the budget itself is a setting (live.prompt_max_chars)
    query = bounded_query(prompt)
    reason = trivial_reason(query, params.min_words)
    if reason:
        return PromptAnswer("", False, [f"trivial prompt: {reason}"])
    unreached = ""
    if found is None:
        found, unreached = recalled(service, query, cwd)
    measured = measure(service, query, cwd, session_id, max(shape.units, params.weigh), params.weigh, found)
    if isinstance(measured, str):
        return PromptAnswer("", False, [unreached, measured] if unreached else [measured])
    signals, units = measured
    inject, reasons = decide(signals, params)
    if unreached:
        reasons.insert(0, unreached)
    if not inject:
        return PromptAnswer("", False, reasons, signals)
    passages = []
    doc_rows: dict[str, list[dict[str, Any]]] = {}
    read = 0
    for _, row, _ in units[:shape.units]:
        if row.get("kind") == "message" and row["doc"] not in doc_rows:
            # A document's turns are read (~10 ms each) only for the passages that show context;
            # the others need its title, which recall has mostly read already.
            if read < shape.context_for:
                doc_rows[row["doc"]], read = service.nodes.doc_nodes(row["doc"]), read + 1
            else:
                doc_rows[row["doc"]] = _conversation_row(row, found[1])
        cite = row["path"].split("/")[1] if row["doc"].startswith("conv:") and "/" in row["path"] else f"[[{row['doc']}]]"
        passages.append(passage_for(row, doc_rows.get(row["doc"], []), cite))
    block = render_prompt_block(query, merge(passages, shape.gap), max_chars or live.prompt_max_chars, shape)
    service._log_access([row["id"] for _, row, _ in units[:shape.units]])
    return PromptAnswer(block, bool(block), reasons, signals)


def measure(service: "MemoryService", query: str, cwd: str | None = None, session_id: str | None = None,
            units_max: int = 8, weigh: int = 3, found: tuple[Any, ...] | None = None, match_dates: bool = True
            ) -> tuple[Signals, list[tuple[Any, dict[str, Any], float]]] | str:
    """The signals the decision reads for ``query`` (already bounded and not trivial) and the
    evidence units in rank order (at most ``units_max``; the first ``weigh`` are measured), or
    the reason there is no evidence unit at all. ``match_dates=False``: date words count only
    when a unit's text holds them (the bench weighs that variant)."""
    from memvault.live.prompt_gate import contentless, date_words, structural

    scored, rows, cands, qv = found or recalled(service, query, cwd)[0]
    own = session_doc(session_id)
    vector_cos = sorted((c.cos for c in cands if c.vector_rank is not None and c.cos is not None), reverse=True)
    tail = vector_cos[BACKGROUND_FROM:] or vector_cos[-1:]
    background = sum(tail) / len(tail) if tail else 0.0
    # The closest node of any kind, an exchange too (two turns say more than one), but never
    # one of the session the prompt is typed in.
    top_cos = max((c.cos for c in cands if c.vector_rank is not None and c.cos is not None
                   and not (own and (c.doc or (rows.get(c.id) or {}).get("doc")) == own)), default=0.0)
    units: list[tuple[Any, dict[str, Any], float]] = []
    bundled = _gate_embedder(service, qv is not None)
    for s in scored:
        row = rows[s.id]
        if row.get("kind") in ("conversation", "exchange") or (own and row.get("doc") == own):
            continue
        text = str(row.get("text") or "")
        if structural(text) or contentless(text):
            continue
        if any(_nested(row, other) for _, other, _ in units):
            continue  # an article, its section and its paragraph say one thing once
        c = s.candidate
        if bundled is not None or c.cos is not None:
            cos = c.cos or 0.0  # with ``bundled``, measured below
        else:
            cos = float(c.vector @ qv) if c.vector is not None and qv is not None else 0.0
        units.append((s, row, cos))
        if len(units) == max(units_max, weigh):
            break
    if not units:
        return ("no recalled node can stand as evidence (only greetings, headings "
                "or turns of this session matched)")
    if bundled is not None:
        units, top_cos, background = _bundled_cosines(bundled, query, units, weigh)
    df, docs = _document_frequencies(service)
    words = content_words(query)
    weighed = units[:weigh]
    dates = date_words(query) if match_dates else {}
    shares = [coverage(words, str(row.get("fts_text") or row.get("text") or ""), df, docs, _when(row), dates)
              for _, row, _ in weighed]
    best_cos = max(cos for _, _, cos in weighed)
    agree = any((s.candidate.vector_rank or 999) <= AGREE_DEPTH and (s.candidate.fts_rank or 999) <= AGREE_DEPTH
                for s, _, _ in weighed)
    signals = Signals(tuple(words), shares[0][1], max(share for share, _ in shares), best_cos, background, agree,
                      any(s.candidate.in_project for s, _, _ in weighed), top_cos,
                      bundled.name if bundled is not None else "")
    return signals, units


def warm(service: "MemoryService") -> None:
    """Load the models a prompt will need (a warm process's first hook then pays for none):
    the index's query embedder and, for a home whose index embeds with another model than
    MiniLM, the bundled MiniLM the decision measures with. Trouble is left to the first prompt."""
    from memvault.errors import MemvaultError
    from stores.nodes import NodeIndex

    trouble = (MemvaultError, ValueError, RuntimeError, OSError)  # a hint only: the first prompt reports it
    try:
        if NodeIndex.exists(service.settings):
            _ = service.nodes  # opened first: an index of another embedder may switch the embedder
        bundled = _gate_embedder(service)
        if bundled is not None:
            bundled.embed(["memvault"])
    except trouble:
        return
    try:
        if service.vectors:
            (_quick_embedder(service) or service.embedder).embed_one("memvault")  # a server: one short try
    except trouble:
        pass


def recalled(service: "MemoryService", query: str, cwd: str | None = None) -> tuple[tuple[Any, ...], str]:
    """``service.scored_candidates`` for a prompt, and why it is by full text alone ("" when
    it is not). A home's embeddings server gets one quick try (``QUERY_TIMEOUT_S``, no retry:
    an agent waits for the hook); when it does not answer, the prompt is recalled by full text
    and the server is left alone for ``SERVER_REST_S`` (a stopped Ollama would otherwise cost
    every prompt its timeout)."""
    from memvault.errors import EmbeddingServerError

    quick = _quick_embedder(service)
    if quick is None:
        return service.scored_candidates(query, cwd), ""
    why = f"the embeddings server at {service.settings.embeddings.url} did not answer: recalled by full text only"
    if time.monotonic() < _RESTING.get(service, 0.0):
        return service.scored_candidates(query, cwd, full_text_only=True), why
    try:
        return service.scored_candidates(query, cwd, query_embedder=quick), ""
    except EmbeddingServerError as exc:
        _RESTING[service] = time.monotonic() + SERVER_REST_S
        spool.log_line(service.settings.state_dir, f"prompt-recall: {exc} — full text only for {SERVER_REST_S:.0f} s")
        return service.scored_candidates(query, cwd, full_text_only=True), why


def _quick_embedder(service: "MemoryService") -> "Embedder | None":
    """The home's embeddings server with one short try a query, or None (no server)."""
    from memvault.embeddings.http import HttpEmbedder

    e = service.embedder
    if not isinstance(e, HttpEmbedder):
        return None
    held = _QUICK.get(service)
    if held is None or held.name != e.name:
        held = HttpEmbedder(e.url, e.model, e.api_key_env, e.batch_size, min(e.timeout_s, QUERY_TIMEOUT_S), retries=0)
        _QUICK[service] = held
    return held


def _gate_embedder(service: "MemoryService", vectors: bool = True) -> "Embedder | None":
    """The bundled MiniLM when the index's cosines are not MiniLM's or the recall had no
    vectors (``gate_embedder_for``), one per service (its cache of the units' vectors lives
    as long as the warm process)."""
    from memvault.embeddings.select import gate_embedder_for

    embedder = service.embedder if service.vectors and vectors else None
    held = _GATE.setdefault(service, {})
    key = embedder.name if embedder is not None else ""
    if key not in held:
        held[key] = gate_embedder_for(embedder)
    return held[key]


def _bundled_cosines(bundled: "Embedder", query: str, units: list[tuple[Any, dict[str, Any], float]], weigh: int
                     ) -> tuple[list[tuple[Any, dict[str, Any], float]], float, float]:
    """The units with their cosines to ``query`` as ``bundled`` measures them (their texts and
    the query embedded together), the best of them (the top cosine), and the mean of those
    past the first ``weigh`` (the background)."""
    texts = [query] + [str(row.get("text") or "")[:UNIT_TEXT_MAX] for _, row, _ in units]
    vectors = bundled.embed(texts)
    cosines = [float(x) for x in vectors[1:] @ vectors[0]]
    tail = cosines[weigh:] or cosines[-1:]
    return ([(s, row, cos) for (s, row, _), cos in zip(units, cosines)], max(cosines),
            sum(tail) / len(tail))


def _conversation_row(row: dict[str, Any], rows: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation node above a turn (turn → exchange → conversation) among the rows recall
    read, as a one-row list, or ``[]``."""
    up = rows.get(str(row.get("parent") or ""))
    for _ in range(2):
        if up is None or up.get("kind") == "conversation":
            break
        up = rows.get(str(up.get("parent") or ""))
    return [up] if up is not None and up.get("kind") == "conversation" else []


def _when(row: dict[str, Any]) -> "datetime | None":
    """The day a conversation's node was said, or None. An article's node carries the time it
    was indexed, which says nothing of what it is about: its date never holds a date word."""
    from datetime import datetime

    from memvault.recall.evidence import day

    # A hit is read from its card, which holds the document key but not its kind.
    stamp = day(row.get("created_at")) if str(row.get("doc") or "").startswith("conv:") else ""
    return datetime.strptime(stamp, "%Y-%m-%d") if stamp else None


def _nested(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One node holds the other: the same document, one path a prefix of the other."""
    if a.get("doc") != b.get("doc") or a.get("kind") == "message" or b.get("kind") == "message":
        return False
    pa, pb = str(a.get("path") or ""), str(b.get("path") or "")
    if pa == pb or pa.startswith(pb + "/") or pb.startswith(pa + "/"):
        return True
    ta, tb = (" ".join(str(r.get("text") or "").split()) for r in (a, b))
    short, long = sorted((ta, tb), key=len)
    return bool(short) and short[:120] in long  # a lead paragraph is also its article's first text


def _via_hub(home: Path, prompt: str, cwd: str | None, session: str | None) -> tuple[str, str] | None:
    """A hub client asks its hub (None for a home with its own memory); trouble is logged, never raised."""
    from memvault.live.hub_wire import HubError, hub_table

    if hub_table(home) is None:
        return None
    from memvault.errors import MemvaultError
    from memvault.live.hub_push import client_hub

    try:
        hub = client_hub(home)
        assert hub is not None
        return str(hub.post("/v1/prompt-recall", {"prompt": prompt, "cwd": cwd, "session_id": session}).get("block") or ""), "hub"
    except (HubError, MemvaultError) as exc:
        spool.log_line(home / ".memvault", f"prompt-recall: {exc} — nothing injected")
        return "", "error"


def prompt_block(service: "MemoryService", prompt: str, cwd: str | None = None,
                 session_id: str | None = None) -> "PromptRecallAnswer":
    """``evaluate`` as JSON (what `memvault serve`'s ``/prompt-recall`` and the daemon answer)."""
    return evaluate(service, prompt, cwd, session_id).as_dict()


def read_payload(raw: str | bytes) -> tuple[str, str | None, str | None] | str:
    """``(prompt, cwd, session_id)`` from hook JSON, or a reason (for the log) why there is none.
    The reason never quotes the payload."""
    if isinstance(raw, bytes):
        if len(raw) > STDIN_MAX_BYTES:
            return f"hook payload of {len(raw):,} bytes is over {STDIN_MAX_BYTES:,}"
        raw = raw.decode("utf-8", errors="replace")
    if not raw.strip():
        return "empty hook payload"
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        return f"hook payload is not JSON ({type(exc).__name__} at char {getattr(exc, 'pos', '?')})"
    if not isinstance(payload, dict):
        return f"hook payload is a JSON {type(payload).__name__}, not an object"
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return "hook payload has no \"prompt\" string"
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    return bounded_query(prompt), cwd, session


def prompt_recall(home: Path, raw: str | bytes, timeout_s: float | None = None) -> tuple[str, str]:
    """What the hook prints for the payload ``raw``, and how it was answered (``trivial``,
    ``daemon``, ``serve``, ``direct``, ``empty`` or ``error``); never raises."""
    state = home / ".memvault"
    parsed = read_payload(raw)
    if isinstance(parsed, str):
        spool.log_line(state, f"prompt-recall: {parsed} — nothing injected")
        return "", "error"
    prompt, cwd, session = parsed
    if not prompt:
        return "", "empty"
    if trivial_reason(prompt) is not None:
        return "", "trivial"
    if (hub := _via_hub(home, prompt, cwd, session)) is not None:
        return hub
    request = {"op": "prompt-recall", "prompt": prompt, "cwd": cwd, "session_id": session}
    answer = hookd_client.ask(home, request)
    if answer is not None:
        return str(answer.get("block") or ""), "daemon"
    info = spool.serve_info(state) if state.is_dir() else None
    if info is not None:
        try:
            wait = timeout_s if timeout_s is not None else float(info.get("prompt_timeout_s") or SERVE_TIMEOUT_S)
            return _via_serve(info, prompt, cwd, wait), "serve"
        except (OSError, ValueError) as exc:
            spool.log_line(state, f"prompt-recall: `memvault serve` (pid {info.get('pid')}) did not answer "
                                  f"({type(exc).__name__}); recalling in process")
    try:
        from memvault.errors import MemvaultError
        from memvault.ops.home import require_home
        from memvault.ops.memory import MemoryService
        from memvault.config.settings import load_settings

        settings = load_settings(home)
        require_home(settings.home)
        from memvault.embeddings.select import query_embedder

        service = MemoryService(settings, query_embedder(settings))
        return evaluate(service, prompt, cwd, session).block, "direct"
    except MemvaultError as exc:
        spool.log_line(state, f"prompt-recall: {exc} — nothing injected")
        return "", "error"


def _via_serve(info: dict[str, Any], prompt: str, cwd: str | None, timeout_s: float) -> str:
    """The block a running `memvault serve` answers for ``prompt`` (its ``/prompt-recall``)."""
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode({"q": prompt, **({"cwd": cwd} if cwd else {})})
    host = info.get("host") or "127.0.0.1"
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{int(info['port'])}/prompt-recall?{query}"
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - loopback, our own server
        answer = json.loads(resp.read().decode("utf-8"))
        return str(answer.get("block") or "")


def explain_prompt(home: Path, prompt: str, cwd: str | None = None) -> str:
    """The decision for ``prompt`` in words and numbers, then the block (or "(nothing)")."""
    from memvault.live.prompt_gate import explain as say

    reason = trivial_reason(bounded_query(prompt))
    answer: Mapping[str, Any] | None = (
        None if reason else hookd_client.ask(home, {"op": "prompt-recall", "prompt": prompt, "cwd": cwd}))
    if answer is None and not reason:
        from memvault.ops.memory import MemoryService
        from memvault.config.settings import load_settings

        answer = evaluate(MemoryService(load_settings(home)), prompt, cwd).as_dict()
    if answer is None:
        return say(False, [f"trivial prompt: {reason}"])
    block = str(answer.get("block") or "")
    text = say(bool(answer.get("injected")), [str(r) for r in answer.get("reasons") or []], len(block))
    return f"{text}\n\n{block or '(nothing injected)'}"
