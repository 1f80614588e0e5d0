"""Prompts a small model can follow: no placeholders to copy, only the Meta guidance a stage
needs, reply budgets that fit the reply, and prompt tokens per call in the run report."""

import json
import re
import shutil
from pathlib import Path

import pytest

from memvault.runs.budget import Budget
from memvault.engines.base import Completion
from memvault.prompts import PROMPTS_DIR, STAGES, load_prompt
from memvault.runs.reports import build_report, markdown
from memvault.stages.chunk_model import ChunkReply
from memvault.stages.chunk_model import reply_tokens as chunk_reply_tokens
from memvault.stages.cluster_model import ClusterReply
from memvault.stages.cluster_model import reply_tokens as cluster_reply_tokens
from memvault.stages.synthesize_model import SynthesisReply

META = Path(__file__).resolve().parents[2] / "vault_template" / "Meta"
# What SmolLM2 copied from the old prompts: `"<message id>"`, `"<topic>"`, `[^<id>]`.
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")


@pytest.mark.parametrize("stage", STAGES)
def test_templates_show_no_placeholder_a_model_could_copy(stage: str) -> None:
    text = (PROMPTS_DIR / f"{stage}.txt").read_text()
    assert not PLACEHOLDER.findall(text)


@pytest.mark.parametrize("stage, model_cls", [("chunk", ChunkReply), ("cluster", ClusterReply),
                                              ("synthesize", SynthesisReply)])
def test_each_template_example_is_a_valid_reply(stage: str, model_cls: type) -> None:
    # The example a model may imitate must itself pass the stage's validation.
    text = (PROMPTS_DIR / f"{stage}.txt").read_text()
    start = text.index("\n{") + 1
    value, _ = json.JSONDecoder().raw_decode(text[start:])
    model_cls.model_validate(value)


def test_system_prompt_carries_only_the_guidance_the_stage_needs(tmp_path: Path) -> None:
    meta = tmp_path / "Meta"
    shutil.copytree(META, meta)
    (meta / "Topics_to_Ignore.md").write_text("# Topics to Ignore\n\n- Salary negotiations: my pay\n")
    chunk, cluster, synth = (load_prompt(s, meta) for s in STAGES)
    assert "Meta/" not in chunk.system and len(chunk.system) < 400
    assert "Salary negotiations" in cluster.system and "Editorial_Guidelines" not in cluster.system
    assert "=== Meta/Editorial_Guidelines.md ===" in synth.system and "Salary negotiations" in synth.system
    for prompt in (chunk, cluster, synth):
        assert "=== Meta/Article_Conventions.md" not in prompt.system and "=== Meta/Buckets.md" not in prompt.system
        assert "Home_Lab_Backups.md" not in prompt.system
    # The four pages were ~9,000 characters in front of every call; the largest stage now carries one.
    assert len(synth.system) < 3_000


def test_a_page_a_stage_does_not_read_leaves_its_hash_alone(tmp_path: Path) -> None:
    meta = tmp_path / "Meta"
    shutil.copytree(META, meta)
    before = {s: load_prompt(s, meta).hash for s in STAGES}
    (meta / "Editorial_Guidelines.md").write_text("# Editorial Guidelines\n\nBe brief.\n")
    after = {s: load_prompt(s, meta).hash for s in STAGES}
    assert after["chunk"] == before["chunk"] and after["cluster"] == before["cluster"]
    assert after["synthesize"] != before["synthesize"]


def test_reply_budgets_fit_the_reply() -> None:
    assert chunk_reply_tokens(4, 768) == 16 + 2 * 32
    assert chunk_reply_tokens(400, 768) == 768  # never past the setting
    assert cluster_reply_tokens(4, 512) == 16 + 4 * 80
    assert cluster_reply_tokens(1, 8) == 8


def test_report_shows_prompt_tokens_per_call() -> None:
    budget = Budget(max_tokens=10_000, max_seconds=60)
    budget.charge("chunk", [Completion(text="{}", prompt_tokens=300, completion_tokens=40, seconds=1.0),
                            Completion(text="{}", prompt_tokens=500, completion_tokens=60, seconds=1.0)])
    budget.charge("synthesize", [Completion(text="{}", prompt_tokens=900, completion_tokens=200, seconds=2.0)])
    report = build_report("r1", "fake", "test", {}, {}, {}, "t0", "t1")
    report["budget"] = budget.summary()
    assert report["budget"]["model_calls"]["chunk"] == {"calls": 2, "prompt_tokens": 800,
                                                       "prompt_tokens_per_call": 400, "reply_tokens": 100}
    text = markdown(report)
    assert "| chunk | 2 | 800 | 400 | 100 |" in text and "| synthesize | 1 | 900 | 900 | 200 |" in text
