"""Fixtures for the model-backed stages: a home with a few sample conversations ingested,
stage contexts over it, and a scripted fake engine that answers each stage validly."""

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memvault.engines import Completion, FakeEngine
from tests.conftest import SAMPLES

# Three conversations: two on the home-lab backups, one on tidepool (small and fast to embed).
SUBSET = ("claude-code/-Users-sam-src-homelab", "claude-code/-Users-sam-src-tidepool/3261b8ab-5e67-5336-a1ad-f00b145dadd3.jsonl")


def copy_subset(dest: Path) -> Path:
    for rel in SUBSET:
        src = SAMPLES / rel
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copyfile(src, target)
    return dest


class ScriptedEngine(FakeEngine):
    """A fake model that answers every stage's prompt with valid JSON derived from the prompt."""

    name = "fake"

    def __init__(self, bucket: str = "Scripted Topic") -> None:
        super().__init__([])
        self.bucket = bucket

    def complete(self, system: str, prompt: str, *, max_tokens: int, json_schema: dict | None = None,
                 cache_prefix: str | None = None) -> Completion:
        if "Task: split one conversation" in prompt:
            last = re.search(r"Messages m1 to (m\d+)", prompt).group(1)
            reply: Any = {"chunks": [{"start": "m1", "end": last, "label": "scripted topic"}]}
        elif "Task: sort conversation chunks" in prompt:
            ids = re.findall(r"--- chunk (c\d+)", prompt)
            if f"- {self.bucket}:" in prompt:
                reply = {"assignments": [{"chunk": c, "buckets": [self.bucket]} for c in ids]}
            else:
                reply = {"assignments": [{"chunk": c, "buckets": [], "new_bucket": {
                    "name": self.bucket, "description": "Everything the scripted model sees."}} for c in ids]}
        else:
            ids = re.search(r"using only these ids: (.+)", prompt).group(1).split(", ")
            reply = {"lead": f"**{self.bucket}** collects scripted notes.[^{ids[0]}]",
                     "edits": [{"section": "Notes", "action": "append",
                                "text": f"A scripted statement drawn from conversation {i}.[^{i}]"} for i in ids]}
        self.responses.append(json.dumps(reply))
        return super().complete(system, prompt, max_tokens=max_tokens, json_schema=json_schema,
                                cache_prefix=cache_prefix)


@pytest.fixture
def stage_home(tmp_path: Path) -> Path:
    """A fresh home with the subset ingested into its ledger (no Prefect involved)."""
    from memvault.ops.home import init_home
    from memvault.settings import load_settings
    from stores.ledger import Ledger
    from tasks.ingest import run_ingest

    home = tmp_path / "home"
    init_home(home)
    src = copy_subset(tmp_path / "src")
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    try:
        run_ingest(ledger, settings, [("auto", src)])
    finally:
        ledger.close()
    return home


@pytest.fixture
def make_ctx(stage_home: Path, embedder) -> Iterator[Any]:
    """`make_ctx(engine, **setting_overrides)` → a StageContext on `stage_home` (closed after)."""
    from memvault.budget import Budget
    from memvault.settings import load_settings
    from stores.ledger import Ledger
    from stores.vault import Vault
    from tasks.context import StageContext

    opened: list[Ledger] = []

    def make(engine: Any, max_tokens: int = 10**9, **overrides: Any) -> StageContext:
        for ledger in opened:
            ledger.close()
        opened.clear()
        settings = load_settings(stage_home, **overrides)
        ledger = Ledger(settings.ledger_path)
        opened.append(ledger)
        return StageContext(settings=settings, ledger=ledger, vault=Vault(stage_home), embedder=embedder,
                            run_id="test-run", engine=engine, budget=Budget(max_tokens, 3600))

    yield make
    for ledger in opened:
        ledger.close()
