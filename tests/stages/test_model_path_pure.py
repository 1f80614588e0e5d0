"""Pure parts of the model path: prompt templates and hashes, chunk-id repair, section edits."""

import shutil
from pathlib import Path

import pytest

from memvault.markdown.gate import gate
from memvault.hygiene.noise import MEMVAULT_SELF_CALL_SENTINEL
from memvault.prompts import PROMPTS_DIR, PromptError, load_prompt
from memvault.stages.chunk_model import ChunkSpan, RepairError, repair
from memvault.stages.synthesize_model import Edit, SynthesisReply, apply_reply

META = Path(__file__).resolve().parents[2] / "vault_template" / "Meta"


def spans(*triples: tuple[str, str]) -> list[ChunkSpan]:
    return [ChunkSpan(start=a, end=b, label=f"t{i}") for i, (a, b) in enumerate(triples)]


def test_prompt_carries_sentinel_meta_and_names_a_missing_variable(tmp_path: Path) -> None:
    prompt = load_prompt("cluster", META)
    assert MEMVAULT_SELF_CALL_SENTINEL in prompt.system and "=== Meta/" not in prompt.system  # buckets go in the prompt
    text = prompt.render(buckets="- A: a", chunks="--- chunk c1 ---\nhello")
    assert MEMVAULT_SELF_CALL_SENTINEL in text and "$" not in text.split("Chunks:")[1].split("Answer")[0]
    with pytest.raises(PromptError, match=r"\$chunks"):
        prompt.render(buckets="- A: a")


def test_prompt_hash_changes_with_the_template_or_a_meta_page(tmp_path: Path) -> None:
    meta, prompts = tmp_path / "Meta", tmp_path / "prompts"
    shutil.copytree(META, meta)
    shutil.copytree(PROMPTS_DIR, prompts, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    before = load_prompt("synthesize", meta, prompts).hash
    assert load_prompt("synthesize", meta, prompts).hash == before
    (meta / "Editorial_Guidelines.md").write_text("# Editorial Guidelines\n\nBe brief.\n")
    after_meta = load_prompt("synthesize", meta, prompts).hash
    (prompts / "synthesize.txt").write_text((prompts / "synthesize.txt").read_text() + "\nBe precise.\n")
    after_template = load_prompt("synthesize", meta, prompts).hash
    assert len({before, after_meta, after_template}) == 3


def test_repair_accepts_a_clean_cover() -> None:
    ranges, notes = repair(spans(("m1", "m3"), ("m4", "m6")), 6, 3)
    assert [(a, b) for a, b, _ in ranges] == [(0, 2), (3, 5)] and notes == []


def test_repair_fixes_near_misses_deterministically() -> None:
    # off by one past the end, an overlap of one message, a small gap, a decorated id
    ranges, notes = repair(spans(("m1", "m4"), ("m4", "m6"), ("message 8", "m11")), 10, 3)
    assert [(a, b) for a, b, _ in ranges] == [(0, 3), (4, 6), (7, 9)]
    assert any("overlap" in n for n in notes) and any("snapped" in n for n in notes)
    ranges, _ = repair(spans(("m2", "m5"), ("m9", "m10")), 10, 3)
    assert [(a, b) for a, b, _ in ranges] == [(0, 7), (8, 9)]  # leading gap and middle gap joined


@pytest.mark.parametrize("bad, why", [
    ((("m1", "m3"), ("m2", "m6")), "overlap by 2"),
    ((("m1", "m2"), ("m9", "m10")), "in no chunk"),
    ((("m1", "m5"), ("xyz", "m10")), "not one of"),
])
def test_repair_gives_up_on_unusable_ids(bad, why) -> None:
    with pytest.raises(RepairError, match=why):
        repair(spans(*bad), 10, 3)


ARTICLE = """# Backups

**Backups** covers the NAS backups, which run nightly and keep data for a while.[^1]

## Schedule

The backup runs at 02:00 every night.[^1]

## References

[^1]: `conv:aaaaaaaa` (2026-01-01, claude-code) — first
"""
KNOWN = {"aaaaaaaa" + "0" * 56, "bbbbbbbb" + "1" * 56}
DEFS = {"bbbbbbbb": "`conv:bbbbbbbb` (2026-02-02, chatgpt) — second"}


def test_edits_add_and_supersede_without_deleting_anything() -> None:
    reply = SynthesisReply(edits=[
        Edit(section="Schedule", action="supersede", old="The backup runs at 02:00 every night.",
             text="It now runs at 02:30.[^bbbbbbbb]"),
        Edit(section="Retention", action="new", text="Backups are kept for 14 days.[^bbbbbbbb]"),
    ])
    new, problems, _ = apply_reply(ARTICLE, "Backups", reply, DEFS, "2026-02-02")
    assert problems == [] and gate(new, ARTICLE, KNOWN) == []
    assert "The backup runs at 02:00 every night. (Superseded on 2026-02-02: It now runs at 02:30.[^2])" in new
    assert "## Retention\n\nBackups are kept for 14 days.[^2]" in new
    assert new.index("## Retention") < new.index("## References")
    assert "[^2]: `conv:bbbbbbbb`" in new and "[^1]: `conv:aaaaaaaa`" in new


def test_an_uncited_edit_or_an_unknown_id_is_rejected() -> None:
    reply = SynthesisReply(edits=[Edit(section="Schedule", text="It runs later now.")])
    _, problems, _ = apply_reply(ARTICLE, "Backups", reply, DEFS, "2026-02-02")
    assert any("cites no conversation" in p for p in problems)
    reply = SynthesisReply(edits=[Edit(section="Schedule", text="It runs later now.[^cccccccc]")])
    new, problems, _ = apply_reply(ARTICLE, "Backups", reply, DEFS, "2026-02-02")
    assert any("unknown conversation conv:cccccccc" in r for r in gate(new, ARTICLE, KNOWN))
