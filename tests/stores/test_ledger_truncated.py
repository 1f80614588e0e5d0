"""A ledger file cut short (a full disk, an interrupted copy) gives the same guidance as any
other damage: LedgerDamagedError naming `memvault restore`, never DuckDB's IOException."""

import json
import os
from pathlib import Path

import pytest

from memvault.errors import LedgerDamagedError
from tests.helpers import cc_session, cli


@pytest.mark.parametrize("keep", [100, 12288])
def test_a_truncated_ledger_says_to_restore(home: Path, tmp_path: Path, keep: float) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots

    settings = load_settings(home)
    (tmp_path / "s.jsonl").write_text(cc_session("s", ["the NAS backup runs at 2am", "ok"] * 200))
    with Ledger.open(settings) as ledger:
        ingest_roots(ledger, settings, [("claude-code", tmp_path / "s.jsonl")])
        ledger.checkpoint()
    size = settings.ledger_path.stat().st_size
    os.truncate(settings.ledger_path, int(size * keep) if keep < 1 else int(keep))
    with pytest.raises(LedgerDamagedError, match="memvault restore"):
        with Ledger.open(settings, read_only=True) as ledger:
            ledger.counts()  # damage shows on the open or on the first read of a lost block
    out = cli("--home", str(home), "status", "--json")
    assert out.exit_code == 1 and "memvault restore" in json.loads(out.stdout)["error"]
