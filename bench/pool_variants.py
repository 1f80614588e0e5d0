"""Issue 29's fifth round: candidates the two searches miss (bench/recall_vector_variants.py's
``--family "fifth round"``; the families are described there). Adopted: the wider pools (top_k 100).

Each ranker scores one case as the product would, with candidates added (a speaker pool),
lifts added (near turns) or the candidate depth and weights changed on some questions only.
The nodes a case never read (a pooled turn, a turn lifted from a near one) come from
``message_nodes``: every message of the conversation as the index stage writes it.
"""

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memvault.markdown.tree import conversation_nodes
from memvault.recall.query import asks_guess, exact_tokens, speaker
from memvault.recall.scoring import Candidate, Scored
from memvault.stages.index_rows import rows_for

from bench import recall_quality as rq
from bench.scoring_variants import BenchWeights, score_variants

Vectors = dict[str, np.ndarray]
Nodes = dict[str, tuple[str, str | None]]
Ranker = Callable[[rq.Case, Nodes], list[str]]


def conversation_rows(data: list[dict[str, Any]], context_turns: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(conversation id, row) of every node the index stage writes for ``data``."""
    for sample in data:
        name = str(sample.get("sample_id", "conv"))
        for n, date, raw, turns in rq.sessions(sample["conversation"]):
            msgs: list[tuple[str, str, str, datetime | str | None]] = [
                (str(t["dia_id"]), str(t.get("speaker") or "?"), rq.turn_text(t), date) for t in turns]
            doc = f"conv:{name}-s{n}"
            tree = conversation_nodes(doc[5:], f"s{n}", f"{name} session {n}",
                                      date.strftime("%Y-%m-%d %H:%M") if date else raw, "locomo", msgs)
            for r in rows_for(doc, "conversation", tree, context_turns):
                yield name, r


class MessageNodes:
    """Every message of each conversation as recall would read it (the lookup's candidate, with
    its exchange as siblings), its session's messages in order, and its speaker."""

    def __init__(self, data: list[dict[str, Any]], conversations: dict[str, rq.ConversationCases],
                 context_turns: int) -> None:
        self.by_conv: dict[str, dict[str, Candidate]] = {}
        self.place: dict[str, tuple[list[str], int]] = {}  # id -> (its session's messages, its index)
        sessions: dict[str, list[tuple[int, str]]] = {}
        for conv, r in conversation_rows(data, context_turns):
            if r["kind"] != "message":
                continue
            self.by_conv.setdefault(conv, {})[r["id"]] = Candidate(
                id=r["id"], parent=r["parent"], importance=float(r["importance"]), reply=r["reply"], text=r["text"],
                chars=len(r["text"]), timestamp=r["created_at"], doc=r["doc"], siblings=list(r["kin"] or []))
            sessions.setdefault(r["doc"], []).append((int(r["ord"]), r["id"]))
        for doc_nodes in sessions.values():
            ids = [nid for _, nid in sorted(doc_nodes)]
            for i, nid in enumerate(ids):
                self.place[nid] = (ids, i)
        # The `similar` edges are written with the index, not by rows_for: take them from the
        # nodes the cases read.
        for conv, cases in conversations.items():
            mine = self.by_conv.get(conv, {})
            for case in cases.cases:
                for c in [*case.hits, *case.lifted.values()]:
                    if c.id in mine and c.similar and not mine[c.id].similar:
                        mine[c.id].similar = list(c.similar)
        self.speaker = {nid: speaker(c.text) for nodes in self.by_conv.values() for nid, c in nodes.items()}


def _score(case: rq.Case, w: BenchWeights, extra: list[Candidate] | None = None,
           store_more: dict[str, Candidate] | None = None, edit: Callable[[Candidate], Candidate] | None = None) -> list[Scored]:
    hits, dropped = rq.cut_candidates(case.hits, w.top_k, w.hop_k)
    store = {**(store_more or {}), **case.lifted, **dropped}
    if edit is not None:
        hits = [edit(c) for c in hits]
    return score_variants(hits + (extra or []), lambda ids: {i: store[i] for i in ids if i in store},
                          w, datetime.now(timezone.utc), query=case.question)


def _turns(ranked: list[Scored], nodes: Nodes) -> list[str]:
    return rq.turn_ranking([{"kind": nodes[s.id][0], "ref": nodes[s.id][1]} for s in ranked if s.id in nodes])


def _conv_of(case: rq.Case, msgs: MessageNodes) -> str | None:
    return next((conv for conv, nodes in msgs.by_conv.items() if case.hits and case.hits[0].id in nodes), None)


def speaker_pool(w: BenchWeights, msgs: MessageNodes, vec: Vectors, qvec: Vectors, k: int, guess_only: bool) -> Ranker:
    def rank(case: rq.Case, nodes: Nodes) -> list[str]:
        conv = _conv_of(case, msgs)
        names = {t for t in exact_tokens(case.question) if t.isalpha()}
        if conv is None or case.question not in qvec or (guess_only and not asks_guess(case.question)):
            return _turns(_score(case, w), nodes)
        own = [nid for nid in msgs.by_conv[conv] if msgs.speaker[nid] in names and nid in vec]
        if not own:
            return _turns(_score(case, w), nodes)
        cos = {nid: float(vec[nid] @ qvec[case.question]) for nid in own}
        have = {c.id for c in rq.cut_candidates(case.hits, w.top_k, w.hop_k)[0]}
        extra = [replace(msgs.by_conv[conv][nid], cos=cos[nid])
                 for nid in sorted(own, key=lambda n: -cos[n])[:k] if nid not in have]
        return _turns(_score(case, w, extra, msgs.by_conv[conv]), nodes)
    return rank


def near_turns(w: BenchWeights, msgs: MessageNodes, share: float, steps: tuple[int, ...], guess_only: bool) -> Ranker:
    def rank(case: rq.Case, nodes: Nodes) -> list[str]:
        conv = _conv_of(case, msgs)
        if conv is None or (guess_only and not asks_guess(case.question)):
            return _turns(_score(case, w), nodes)

        def edit(c: Candidate) -> Candidate:
            # Carried by the `similar` lift (base × neighbour_damping × sim): sim chosen so the
            # near turn gets base × share.
            if c.id not in msgs.place:
                return c
            ids, i = msgs.place[c.id]
            near = [(ids[j], share / w.neighbour_damping) for s in steps for j in (i - s, i + s) if 0 <= j < len(ids)]
            return replace(c, similar=list(c.similar) + near)
        return _turns(_score(case, w, store_more=msgs.by_conv[conv], edit=edit), nodes)
    return rank


def on_guesses(w: BenchWeights, guess: BenchWeights) -> Ranker:
    """``guess`` on a question that asks for a guess, ``w`` on the others."""
    def rank(case: rq.Case, nodes: Nodes) -> list[str]:
        return _turns(_score(case, guess if asks_guess(case.question) else w), nodes)
    return rank


def fifth_round(base: BenchWeights, msgs: MessageNodes, vec: Vectors, qvec: Vectors,
                max_top_k: int | None) -> dict[str, dict[str, Ranker]]:
    """The families, each with "none" (the product); wider pools only when the cases hold them."""
    none = on_guesses(base, base)
    out: dict[str, dict[str, Ranker]] = {}
    out["fifth round: speaker pool"] = {"none": none} | {
        f"k {k}{', guesses' if g else ''}": speaker_pool(base, msgs, vec, qvec, k, g) for k in (10, 20, 40) for g in (False, True)}
    out["fifth round: near turns"] = {"none": none} | {
        f"d {d:g}, steps {'/'.join(map(str, s))}{', guesses' if g else ''}": near_turns(base, msgs, d, s, g)
        for d in (0.3, 0.45) for s in ((2,), (2, 4)) for g in (False, True)}
    if max_top_k and max_top_k > (base.top_k or 0):
        wide: dict[str, Ranker] = {"none": none}
        for k in (60, 80, 100):
            if k > max_top_k:
                continue
            deeper = base.model_copy(update={"top_k": k})
            wide[f"top_k {k}"] = on_guesses(deeper, deeper)
            wide[f"top_k {k}, guesses"] = on_guesses(base, deeper)
            wide[f"top_k {k}, guesses, shift 0.3"] = on_guesses(base, deeper.model_copy(update={"guess_shift": 0.3}))
        wide["top_k 40, guesses, shift 0.3"] = on_guesses(base, base.model_copy(update={"guess_shift": 0.3}))
        out["fifth round: wider pools"] = wide
    out["fifth round: guess hop"] = {"none": none} | {
        f"hop_k {h}, w_hop {x:g}": on_guesses(base, base.model_copy(update={"hop_k": h, "w_hop": x}))
        for h in (0, 10, 20) for x in (0.0, 0.05, 0.1, 0.2) if h or x} | {
        f"hop_k {h}, every question": on_guesses(hopped, hopped)
        for h in (10, 20) for hopped in [base.model_copy(update={"hop_k": h})]}
    reply = {"reply_damping": 0.5, "reply_statement_damping": 0.25}
    out["fifth round: guess reply / speaker"] = {"none": none} | {
        f"reply {q:g} / {st:g}": on_guesses(base, base.model_copy(update={"reply_damping": q, "reply_statement_damping": st}))
        for q in (0.5, 0.75) for st in (0.25, 0.5)} | {
        f"speaker {x:g}{', reply 0.5 / 0.25' if r else ''}":
        on_guesses(base, base.model_copy(update={"w_speaker": x, **(reply if r else {})}))
        for x in (0.2, 0.3) for r in (False, True)}
    return out
