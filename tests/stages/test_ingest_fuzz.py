"""Fuzzed files never stop ingest and never cost the good files of the same run."""

import random
import signal
from pathlib import Path

from memvault.stages.ingest import ingest_roots
from tests.helpers import cc_session
from tests.stages.fuzz_inputs import fuzz_case

CASES = 40


def test_fuzzed_inputs_never_crash_ingest_or_lose_a_good_file(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    rng = random.Random(20261201)
    src = tmp_path / "src"
    src.mkdir()
    for n in range(CASES):
        fuzz_case(rng, src, n)
    (src / "good-a.jsonl").write_text(cc_session("good-a", ["How do I back up postgres?", "Use pg_dump nightly."]))
    (src / "good-b.jsonl").write_text(cc_session("good-b", ["What port does redis use?", "6379 by default."]))

    def hung(*_: object) -> None:
        raise TimeoutError("ingest blocked on a fuzzed file")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(300)
    try:
        result = ingest_roots(ledger, settings, [("auto", src)])  # crashed: it raises
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    stored = {r[0] for r in ledger.con.execute("SELECT native_id FROM conversations").fetchall()}
    assert {"good-a", "good-b"} <= stored  # good files lost: 0
    assert result.files_seen == CASES + 2
    for error in result.errors:
        assert error.file and error.error  # every problem names its file
