"""Public dialogue topic-segmentation sets with human gold, read from a cache folder at run time.

bench/chunk_quality.py scores memvault's chunking on these; nothing here is committed. Every
reader returns conversations in the schema of bench/data/README.md:
``{"id": str, "messages": [{"role": "user"|"assistant", "text": str}], "starts": [int]}``,
``starts`` being the 0-based indices of the messages that open a new topic (0 implied, left
out). The sets name no roles: DialSeg711's user and system alternate user / assistant from the
first utterance; TIAGE's two PersonaChat speakers are both people and either opens topics (more
than half its gold shifts are the second speaker's), so both are read as `user` and the
segmenter reads it message by message (``tiage-pairs:<split>``: the earlier alternating reading).

The cache folder (``--cache``, default ``$MEMVAULT_SEGMENTATION_DATA`` or
``~/.cache/memvault/segmentation``) holds the repositories as they are published, cloned
under their own names; bench/README.md lists where each comes from and its licence:

- ``tiage/`` — github.com/HuiyuanXie/tiage (MIT): ``data/personachat/anno/<split>/anno_<split>.json``;
- ``Dialogue-Topic-Segmenter/`` — github.com/lxing532/Dialogue-Topic-Segmenter (no licence
  stated: read in place for evaluation, never redistributed): ``data/eval/<name>.json``;
- ``TADAM/`` — github.com/xyease/TADAM (no licence stated, likewise):
  ``examples/DATASET/en/en_dataset_reference_2.txt`` (DialSeg711 as first published).
"""

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Conversation = dict[str, Any]

ROLES = ("user", "assistant")


def default_cache() -> Path:
    """Where the public sets are looked for unless ``--cache`` says otherwise."""
    given = os.environ.get("MEMVAULT_SEGMENTATION_DATA")
    return Path(given) if given else Path.home() / ".cache" / "memvault" / "segmentation"


def _conversation(cid: str, texts: Sequence[str], starts: Sequence[int], people: bool = False) -> Conversation:
    roles = ("user", "user") if people else ROLES
    return {"id": cid, "messages": [{"role": roles[i % 2], "text": t} for i, t in enumerate(texts)],
            "starts": sorted({s for s in starts if 0 < s < len(texts)})}


def read_tiage(path: Path, prefix: str = "tiage", people: bool = True) -> list[Conversation]:
    """TIAGE's annotated PersonaChat dialogues: ``{id: [[utterance, label], ...]}``; label "1"
    marks an utterance that shifts the topic ("-1" on the first, "0" elsewhere). ``people``:
    both speakers as `user` (else they alternate user / assistant)."""
    data = _json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected TIAGE's object of dialogues {{id: [[utterance, label], ...]}}")
    out = []
    for did, turns in data.items():
        if not isinstance(turns, list) or not all(isinstance(t, list) and len(t) == 2 for t in turns):
            raise ValueError(f"{path}: dialogue {did!r} is not a list of [utterance, label] pairs")
        out.append(_conversation(f"{prefix}-{did}", [str(t[0]) for t in turns],
                                 [i for i, t in enumerate(turns) if str(t[1]) == "1"], people))
    return out


def read_unified(path: Path, split: str = "all", prefix: str | None = None, dev_every: int = 0) -> list[Conversation]:
    """The unified evaluation sets of Dialogue-Topic-Segmenter: a list of ``{dial_id,
    utterances, segments, set}``, ``segments`` the lengths of consecutive topic segments;
    ``split`` keeps the dialogues whose ``set`` is that (``all``: every one). ``dev_every``
    > 0 also moves every n-th `test` dialogue (counting from the first) into `dev`, for sets
    whose own dev split is too small to choose anything on."""
    data = _json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of {{dial_id, utterances, segments, set}} dialogues")
    name = prefix or path.stem
    out, tests = [], 0
    for n, d in enumerate(data):
        part = d.get("set")
        if part == "test":
            part = "dev" if dev_every and tests % dev_every == 0 else "test"
            tests += 1
        if split != "all" and part != split:
            continue
        utterances, lengths = d["utterances"], d["segments"]
        if sum(lengths) != len(utterances):
            raise ValueError(f"{path}: dialogue {d.get('dial_id', n)!r} has segments summing to {sum(lengths)} "
                             f"for {len(utterances)} utterances")
        starts, at = [], 0
        for length in lengths[:-1]:
            at += length
            starts.append(at)
        out.append(_conversation(f"{name}-{d.get('dial_id', n)}", [str(u) for u in utterances], starts))
    return out


def read_tadam(path: Path, prefix: str = "dialseg711") -> list[Conversation]:
    """DialSeg711 as TADAM publishes it: a ``call_id_<n>`` line opens a dialogue, then one
    ``<topic number> <utterance>`` line per utterance; a topic starts where the number changes."""
    out: list[Conversation] = []
    cid: str | None = None
    texts: list[str] = []
    topics: list[str] = []

    def flush() -> None:
        if cid is not None and texts:
            out.append(_conversation(f"{prefix}-{cid}", texts, [i for i in range(1, len(topics)) if topics[i] != topics[i - 1]]))

    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("call_id_"):
            flush()
            cid, texts, topics = line.strip()[len("call_id_"):], [], []
            continue
        topic, _, text = line.partition(" ")
        if cid is None or not topic.isdigit():
            raise ValueError(f"{path}:{lineno}: expected 'call_id_<n>' or '<topic number> <utterance>', got {line[:60]!r}")
        topics.append(topic)
        texts.append(text)
    flush()
    return out


def read_memvault(path: Path) -> list[Conversation]:
    """memvault's own labelled file (bench/data/README.md)."""
    data = _json(path)
    if not isinstance(data, dict) or "conversations" not in data:
        raise ValueError(f'{path}: expected {{"conversations": [...]}} (bench/data/README.md)')
    convs: list[Conversation] = data["conversations"]
    return convs


def read_any(path: Path) -> list[Conversation]:
    """Any of the formats above, told apart by their shape."""
    if path.suffix == ".txt":
        return read_tadam(path)
    data = _json(path)
    if isinstance(data, list):
        return read_unified(path)
    if isinstance(data, dict) and "conversations" in data:
        return read_memvault(path)
    return read_tiage(path)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc


ROOT = Path(__file__).resolve().parents[1]
DEV_FILE = ROOT / "bench" / "data" / "segmentation_dev.json"
TIAGE = "tiage/data/personachat/anno/{split}/anno_{split}.json"
UNIFIED = "Dialogue-Topic-Segmenter/data/eval/{name}.json"
# DialSeg711's own dev split holds 7 dialogues; every 10th test dialogue joins it (77 in all).
DIALSEG_DEV_EVERY = 10
TADAM = "TADAM/examples/DATASET/en/en_dataset_reference_2.txt"


def _ours(_cache: Path) -> list[Conversation]:
    # The real conversations of the dev file (not the synthetic ones), boundaries marked by us.
    return [c for c in read_memvault(DEV_FILE) if not c["id"].startswith("synthetic-")]


def _synthetic(_cache: Path) -> list[Conversation]:
    return [c for c in read_memvault(DEV_FILE) if c["id"].startswith("synthetic-")]


Reader = Callable[[Path], list[Conversation]]


def _tiage_split(split: str, people: bool = True) -> Reader:
    return lambda cache: read_tiage(cache / TIAGE.format(split=split), people=people)


def _unified_split(name: str, split: str, label: str, dev_every: int | None = None) -> Reader:
    if dev_every is None:
        return lambda cache: read_unified(cache / UNIFIED.format(name=name), split, label)
    return lambda cache: read_unified(cache / UNIFIED.format(name=name), split, label, dev_every)


SETS: dict[str, Reader] = {
    **{f"tiage:{s}": _tiage_split(s) for s in ("train", "dev", "test")},
    **{f"tiage-pairs:{s}": _tiage_split(s, people=False) for s in ("train", "dev", "test")},
    **{f"dialseg711:{s}": _unified_split("dialseg_711", s, "dialseg711", DIALSEG_DEV_EVERY) for s in ("dev", "test")},
    "dialseg711:tadam": lambda cache: read_tadam(cache / TADAM),
    **{f"committee:{s}": _unified_split("meeting_committee", s, "committee") for s in ("dev", "test")},
    "ours": _ours,
    "synthetic": _synthetic,
}


def load_set(name: str, cache: Path | None = None) -> list[Conversation]:
    """The conversations of a named set (``SETS``), or of a file in any format above."""
    cache = cache or default_cache()
    if name in SETS:
        try:
            return SETS[name](cache)
        except FileNotFoundError as exc:
            raise SystemExit(f"set {name!r}: {exc.filename} is missing; clone the set's repository into {cache} "
                             f"(bench/README.md, Topic segmentation) or pass --cache") from exc
    path = Path(name)
    if not path.is_file():
        raise SystemExit(f"unknown set {name!r}: name one of {', '.join(SETS)} or a file")
    return read_any(path)
