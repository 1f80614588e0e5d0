"""Topic segmentation quality: chunk boundaries against hand-marked ones.

    .venv/bin/python bench/chunk_quality.py --data bench/data/segmentation_dev.json --engine none --json
    .venv/bin/python bench/chunk_quality.py --data FILE --engine none --engine fake --replies replies.json
    .venv/bin/python bench/chunk_quality.py --data bench/data/segmentation_dev.json --engine none \
        --engine replay:tests/fixtures/replies/smollm2-135m-mlx-segmentation.json --only-replayed
    .venv/bin/python bench/chunk_quality.py --data FILE --split held        # the half not used for tuning

The input is one JSON file, so any labelled set can be scored:
``{"conversations": [{"id": str, "messages": [{"role": "user"|"assistant", "text": str}, ...],
"starts": [int, ...]}]}``; ``starts`` are the 0-based indices of the messages that open a new
topic (0 is implied). Each conversation goes through memvault's own chunking code
(memvault.stages.chunk: `plan_chunks` for `none`, `model_segments` with the stage's prompt, parser and
repair for a model engine, falling back as the stage does) with the real embedder.

Scores, pooled over all conversations:
- precision / recall / F1 of boundaries, a predicted boundary matching a gold one at most one
  message away (each gold boundary matched at most once);
- Pk (Beeferman et al. 1999) and WindowDiff (Pevzner & Hearst 2002) over message positions,
  k = half the mean gold segment length of each conversation (at least 1), windows pooled;
- ``chunks`` predicted and ``gold_chunks``.

Engines: `none`; `fake` replays recorded replies (``--replies``: a JSON object mapping a
conversation id to the list of raw reply strings the model gave, in call order; a
conversation without replies falls back, as a failed model call does); `replay:PATH` replays
the chunk replies of fixtures that bench/record_replies.py `--segmentation` wrote (PATH: one
file or several joined by commas; a real
model's replies to the very prompts this bench sends; `--only-replayed` scores only the
conversations the fixture has replies for, every engine on the same ones); `mlx`, `openai`,
`auto` build the engine from the settings of ``--home`` (default: a fresh temporary home and
the environment).
"""

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.segmentation_sets import SETS, load_set, read_any  # noqa: E402

TOLERANCE = 1  # a boundary one message off still counts as found


def boundary_matches(gold: Sequence[int], predicted: Sequence[int], tolerance: int = TOLERANCE) -> int:
    """How many predicted boundaries match a distinct gold boundary within ``tolerance`` messages.

    Exact hits are paired first, then the nearest remaining ones, so a near miss never steals
    the partner of an exact hit.
    """
    free_gold = sorted(set(gold))
    unmatched = []
    hits = 0
    for p in sorted(set(predicted)):
        if p in free_gold:
            free_gold.remove(p)
            hits += 1
        else:
            unmatched.append(p)
    for p in unmatched:
        near = [g for g in free_gold if abs(g - p) <= tolerance]
        if near:
            free_gold.remove(min(near, key=lambda g: (abs(g - p), g)))
            hits += 1
    return hits


def labels(starts: Sequence[int], n: int) -> list[int]:
    """Segment number of each of ``n`` positions, given the positions that open a segment."""
    cuts = {s for s in starts if 0 < s < n}
    out, seg = [], 0
    for i in range(n):
        if i in cuts:
            seg += 1
        out.append(seg)
    return out


def window_k(gold: Sequence[int], n: int) -> int:
    """Half the mean gold segment length, rounded, at least 1 (the usual choice for Pk)."""
    segments = len({s for s in gold if 0 < s < n}) + 1
    return max(1, round(n / segments / 2))


def pk_errors(gold: Sequence[int], predicted: Sequence[int], n: int, k: int) -> tuple[int, int]:
    """(windows where gold and prediction disagree on "same segment", windows) for Pk."""
    ref, hyp = labels(gold, n), labels(predicted, n)
    windows = max(n - k, 0)
    wrong = sum((ref[i] == ref[i + k]) != (hyp[i] == hyp[i + k]) for i in range(windows))
    return wrong, windows


def windowdiff_errors(gold: Sequence[int], predicted: Sequence[int], n: int, k: int) -> tuple[int, int]:
    """(windows whose boundary counts differ, windows) for WindowDiff."""
    ref, hyp = labels(gold, n), labels(predicted, n)
    windows = max(n - k, 0)
    wrong = sum((ref[i + k] - ref[i]) != (hyp[i + k] - hyp[i]) for i in range(windows))
    return wrong, windows


def pk(gold: Sequence[int], predicted: Sequence[int], n: int, k: int | None = None) -> float:
    """Pk of one segmentation of ``n`` positions (0 is perfect); k defaults to :func:`window_k`."""
    wrong, windows = pk_errors(gold, predicted, n, k or window_k(gold, n))
    return wrong / windows if windows else 0.0


def windowdiff(gold: Sequence[int], predicted: Sequence[int], n: int, k: int | None = None) -> float:
    """WindowDiff of one segmentation of ``n`` positions (0 is perfect)."""
    wrong, windows = windowdiff_errors(gold, predicted, n, k or window_k(gold, n))
    return wrong / windows if windows else 0.0


def score(items: Sequence[tuple[Sequence[int], Sequence[int], int]]) -> dict[str, float | int]:
    """Pooled scores over (gold starts, predicted starts, message count) triples."""
    tp = n_pred = n_gold = chunks = gold_chunks = 0
    pk_wrong = pk_windows = wd_wrong = wd_windows = 0
    for gold, predicted, n in items:
        g = sorted({s for s in gold if 0 < s < n})
        p = sorted({s for s in predicted if 0 < s < n})
        tp += boundary_matches(g, p)
        n_pred, n_gold = n_pred + len(p), n_gold + len(g)
        chunks, gold_chunks = chunks + len(p) + 1, gold_chunks + len(g) + 1
        k = window_k(g, n)
        w, t = pk_errors(g, p, n, k)
        pk_wrong, pk_windows = pk_wrong + w, pk_windows + t
        w, t = windowdiff_errors(g, p, n, k)
        wd_wrong, wd_windows = wd_wrong + w, wd_windows + t
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
            "pk": round(pk_wrong / pk_windows, 3) if pk_windows else 0.0,
            "windowdiff": round(wd_wrong / wd_windows, 3) if wd_windows else 0.0,
            "chunks": chunks, "gold_chunks": gold_chunks}


def load(path: Path, split: str = "all") -> list[dict[str, Any]]:
    """The conversations of a labelled file; ``split`` `tune` keeps even positions, `held` odd ones."""
    return halves(read_any(path), split, str(path))


def halves(convs: list[dict[str, Any]], split: str = "all", where: str = "") -> list[dict[str, Any]]:
    """Check the starts of ``convs``; ``split`` `tune` keeps even positions, `held` odd ones."""
    for c in convs:
        bad = [s for s in c["starts"] if not 0 <= s < len(c["messages"])]
        if bad:
            raise SystemExit(f"{where}: conversation {c['id']!r} has starts {bad} outside its {len(c['messages'])} messages")
    if split == "tune":
        return convs[0::2]
    if split == "held":
        return convs[1::2]
    return convs


def rows(conv: dict[str, Any]) -> list[Any]:
    """The conversation as the ledger returns it: message ids `m<index>`, acknowledgements marked low value."""
    from memvault.hygiene.noise import is_low_value
    from stores.rows import MessageRow

    return [MessageRow(native_id=f"m{i}", parent_native_id=f"m{i - 1}" if i else None, seq=i, role=m["role"],
                       kind="text", text=m["text"], timestamp=None, low_value=is_low_value(m["text"]))
            for i, m in enumerate(conv["messages"])]


def conversation_row(conv: dict[str, Any]) -> Any:
    """The ledger row the chunk prompt reads (title, source, date) for a labelled conversation."""
    from datetime import datetime, timezone

    from stores.rows import ConversationRow

    return ConversationRow(id=conv["id"], source="bench", native_id=conv["id"], title=conv.get("title"),
                           project=None, started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), updated_at=None,
                           leaf_native_id=None)


def replay_replies(paths: str | Path) -> dict[str, list[str]]:
    """The chunk replies of recorded segmentation fixtures (bench/record_replies.py; several
    paths joined by commas), per conversation, in call order."""
    out: dict[str, list[str]] = {}
    for path in str(paths).split(","):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for call in data["calls"]:
            if call["stage"] == "chunk" and "conversation" in call:
                out.setdefault(call["conversation"], []).append(call["reply"])
    return out


def starts_of(chunks: list[list[Any]]) -> list[int]:
    """Message indices that open the second and later chunks."""
    return sorted(int(msgs[0].native_id[1:]) for msgs in chunks[1:])


class Segmenter:
    """One engine's path through memvault.stages.chunk, conversation by conversation."""

    def __init__(self, engine_name: str, settings: Any, embedder: Any, replies: dict[str, list[str]]) -> None:
        self.name, self.settings, self.embedder, self.replies = engine_name, settings, embedder, replies
        self.fallbacks: list[dict[str, str]] = []
        self.engine: Any = None
        self.prompt: Any = None
        if engine_name != "none":
            from memvault.prompts import load_prompt

            # The Meta pages a fresh home gets, as `memvault init` copies them.
            self.prompt = load_prompt("chunk", ROOT / "vault_template" / "Meta")
            if engine_name.startswith("replay:"):
                self.replies = replay_replies(engine_name.split(":", 1)[1])
            elif engine_name != "fake":
                from memvault.engines import make_engine

                self.engine, why = make_engine(settings.engine, engine_name)  # type: ignore[arg-type]
                print(why, file=sys.stderr)

    def starts(self, conv: dict[str, Any]) -> list[int]:
        from memvault.stages.chunk import exchanges, model_segments, plan_chunks

        messages = rows(conv)
        if self.name == "none":
            return starts_of([msgs for msgs, _ in plan_chunks(messages, self.embedder, self.settings.chunk)])
        from memvault.engines.base import EngineError
        from memvault.engines.fake import FakeEngine

        engine = self.engine or FakeEngine(list(self.replies.get(conv["id"], [])))
        row = conversation_row(conv)
        fresh = [m for g in exchanges(messages) for m in g]
        try:
            chunks, why, _ = model_segments(engine, self.prompt, self.settings.chunk, row, fresh, lambda _c: None)
        except EngineError as exc:
            if self.engine is not None:
                raise  # a real engine that is down is not the conversation's fault: stop
            chunks, why = None, f"no recorded reply ({exc})"
        if chunks is None:
            self.fallbacks.append({"conversation": conv["id"], "reason": why or ""})
            return starts_of([msgs for msgs, _ in plan_chunks(messages, self.embedder, self.settings.chunk)])
        return starts_of([msgs for msgs, _ in chunks])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, action="append", default=[],
                        help="a labelled file (memvault's schema, or TIAGE / unified / TADAM format); repeatable")
    parser.add_argument("--set", action="append", default=[], dest="sets",
                        help=f"a named set read from --cache: {', '.join(SETS)}; repeatable")
    parser.add_argument("--cache", type=Path, help="folder of the public sets' repositories (bench/segmentation_sets.py)")
    parser.add_argument("--embed-cache", type=Path,
                        help="pickle of embeddings by text hash, kept outside the repository (re-runs embed nothing)")
    parser.add_argument("--engine", action="append",
                        help="none, fake, replay:PATH, mlx, openai or auto; repeatable (default none)")
    parser.add_argument("--replies", type=Path, help="fake engine: {conversation id: [raw reply, ...]}")
    parser.add_argument("--home", type=Path, help="memory home whose settings to use (default: a fresh temporary one)")
    parser.add_argument("--split", choices=("all", "tune", "held"), default="all",
                        help="tune: conversations at even positions; held: odd ones (not used for tuning)")
    parser.add_argument("--only-replayed", action="store_true",
                        help="score only the conversations every replay:PATH engine has replies for")
    parser.add_argument("--per-conversation", action="store_true", help="also list each conversation's starts")
    parser.add_argument("--json", action="store_true", help="print JSON only: {set: {engine: scores}}")
    parser.add_argument("--home-embedder-decides", action="store_true",
                        help="with another embedder than MiniLM (MEMVAULT_EMBEDDINGS__*): decide boundaries with its vectors, "
                        "as before the bundled MiniLM decided them (select.topic_embedder_for)")
    args = parser.parse_args(argv)
    if not args.data and not args.sets:
        parser.error("name at least one --data FILE or --set NAME")

    from memvault.config.settings import load_settings

    sets = [(str(path), load(path, args.split)) for path in args.data]
    sets += [(name, halves(load_set(name, args.cache), args.split, name)) for name in args.sets]
    for name in args.engine or []:
        if args.only_replayed and name.startswith("replay:"):
            recorded = replay_replies(name.split(":", 1)[1])
            sets = [(label, [c for c in convs if c["id"] in recorded]) for label, convs in sets]
    replies = json.loads(args.replies.read_text(encoding="utf-8")) if args.replies else {}
    # As the chunk stage: the bundled MiniLM cuts whatever the home embeds with (select.topic_embedder_for).
    embedder = cached_embedder(args.embed_cache, bundled=not args.home_embedder_decides)
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(args.home or tmp)
        for label, convs in sets:
            out[label] = {}
            for name in args.engine or ["none"]:
                out[label][name] = run_engine(Segmenter(name, settings, embedder, replies), convs, args.per_conversation)
    if embedder.computed:  # nothing new: leave the file to any other run
        embedder.save()
    if args.json:
        print(json.dumps(out))
        return 0
    for label, by_engine in out.items():
        print(f"{label} (split {args.split})")
        for name, s in by_engine.items():
            print(f"{name:>8}: {s['conversations_scored']} conversations  P {s['precision']:.2f}  R {s['recall']:.2f}  "
                  f"F1 {s['f1']:.2f}  Pk {s['pk']:.3f}  WD {s['windowdiff']:.3f}  chunks {s['chunks']} (gold {s['gold_chunks']})"
                  + (f"  fallbacks {s['fallbacks']}" if "fallbacks" in s else ""))
            for d in s.get("conversations", []):
                print(f"   {d['id']}: gold {d['gold']} predicted {d['predicted']}")
    return 0


def cached_embedder(path: Path | None, bundled: bool = False) -> Any:
    """The real MiniLM embedder the product's default names (int8, or fp32 with
    MEMVAULT_BENCH_FP32=1), or another embedder the environment names as the product reads it
    (``MEMVAULT_EMBEDDINGS__URL`` and ``MEMVAULT_EMBEDDINGS__MODEL`` for a server, or the model
    ``all-MiniLM-L6-v2-static``); with ``path``, vectors are kept by text hash across runs (one
    cache file per embedder). ``bundled``: the int8 MiniLM whatever the environment names (the
    chunk stage's embedder of a home that embeds with another model)."""
    from bench.recall_quality import CachedEmbedder, home_embedder
    from memvault.config.settings import load_settings

    if bundled:
        return CachedEmbedder(path)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(Path(tmp))
    return home_embedder(settings, path)


def run_engine(seg: "Segmenter", convs: list[dict[str, Any]], per_conversation: bool) -> dict[str, Any]:
    """One engine's pooled scores over ``convs`` (and each conversation's starts if asked)."""
    items, detail = [], []
    for conv in convs:
        predicted = seg.starts(conv)
        items.append((conv["starts"], predicted, len(conv["messages"])))
        detail.append({"id": conv["id"], "gold": conv["starts"], "predicted": predicted})
    result: dict[str, Any] = {**score(items), "conversations_scored": len(convs)}
    if seg.fallbacks:
        result["fallbacks"] = len(seg.fallbacks)
        result["fallback_reasons"] = [f["reason"].split(":")[0] for f in seg.fallbacks]
    if per_conversation:
        result["conversations"] = detail
    return result


if __name__ == "__main__":
    raise SystemExit(main())
