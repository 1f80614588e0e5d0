"""Fuzzed transcript files for ingest: mutations of real-format fixtures that once broke a run.

``fuzz_case(rng, folder)`` writes one bad (or odd) file into ``folder`` and returns its name;
the mutations are those a hostile tester found and their neighbours: byte flips, cuts, NULs,
deep nesting, CR-only and mixed line ends, BOMs, UTF-16, huge lines, symlink loops, FIFOs.
"""

import codecs
import json
import os
import random
from pathlib import Path

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
SEEDS = sorted(p for p in FORMATS.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def _deep(levels: int, opener: str = "[") -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return '{"a":' * levels + "1" + closer * levels
    return opener * levels + closer * levels


def _mutate(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(12)
    if kind == 0 and data:  # flip some bytes
        out = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if kind == 1:  # cut anywhere
        return data[: rng.randrange(len(data) + 1)]
    if kind == 2:  # a deeply nested line or value
        depth = rng.choice([1_000, 5_000, 20_000])
        return data + ('{"type": "user", "message": ' + _deep(depth, rng.choice("[{")) + "}\n").encode()
    if kind == 3:
        return data.replace(b"\n", b"\r")
    if kind == 4:
        return data.replace(b"\n", b"\r\n")
    if kind == 5:
        return codecs.BOM_UTF8 + data
    if kind == 6:
        return codecs.BOM_UTF16_LE + data.decode("utf-8", "replace").encode("utf-16-le")
    if kind == 7:  # NULs in the middle
        at = rng.randrange(len(data) + 1)
        return data[:at] + b"\0" * rng.randint(1, 64) + data[at:]
    if kind == 8:  # one huge line first
        return json.dumps({"type": "user", "sessionId": "s", "uuid": "u", "message": {
            "role": "user", "content": "y" * rng.choice([2 << 20, 3 << 20])}}).encode() + b"\n" + data
    if kind == 9:  # lines shuffled
        lines = data.split(b"\n")
        rng.shuffle(lines)
        return b"\n".join(lines)
    if kind == 10:  # random JSON values per line
        values = [json.dumps(v) for v in (None, 1, "x", [], {}, {"type": 1}, {"type": "user", "message": []},
                                          {"type": "assistant", "message": {"content": {"x": 1}}})]
        return "\n".join(rng.choice(values) for _ in range(rng.randint(1, 30))).encode()
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 4096)))  # noise


def fuzz_case(rng: random.Random, folder: Path, n: int) -> str:
    """Write fuzzed input number ``n`` into ``folder``; its file name."""
    special = rng.randrange(20)
    if special == 0 and hasattr(os, "mkfifo"):
        name = f"fuzz{n}.jsonl"
        os.mkfifo(folder / name)
        return name
    if special == 1:
        name = f"fuzz{n}.jsonl"
        (folder / name).symlink_to(folder / name)
        return name
    seed = rng.choice(SEEDS)
    name = f"fuzz{n}{seed.suffix}"
    (folder / name).write_bytes(_mutate(rng, seed.read_bytes()))
    return name
