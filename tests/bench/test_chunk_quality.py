"""bench/chunk_quality.py's metrics, against cases worked out by hand."""

import json
from pathlib import Path

import pytest

from bench.chunk_quality import boundary_matches, labels, load, pk, score, window_k, windowdiff

DEV_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "segmentation_dev.json"


def test_boundaries_match_within_one_message_one_to_one() -> None:
    assert boundary_matches([5, 10], [4, 10, 12]) == 2  # 4 ~ 5, 10 = 10, 12 is too far
    assert boundary_matches([5], [4, 6]) == 1  # one gold boundary is found once, not twice
    assert boundary_matches([4, 5], [5]) == 1
    # The exact hit keeps its partner; the near miss may still take the other gold boundary.
    assert boundary_matches([5, 7], [6, 7]) == 2
    assert boundary_matches([5, 6], [6, 7]) == 1  # 7 is two away from the free 5
    assert boundary_matches([3], [5]) == 0


def test_labels_and_k() -> None:
    assert labels([0, 3, 5], 7) == [0, 0, 0, 1, 1, 2, 2]
    assert window_k([5], 10) == 2  # mean segment 5 messages, half of it rounded (2.5 → 2)
    assert window_k([4, 8], 12) == 2
    assert window_k([], 1) == 1  # never 0


def test_pk_and_windowdiff_by_hand() -> None:
    # gold 0000011111, nothing predicted, k = 2: windows i = 0..7 straddle the gold cut at i = 3, 4.
    assert pk([5], [], 10) == pytest.approx(2 / 8)
    assert windowdiff([5], [], 10) == pytest.approx(2 / 8)
    # One message late (0000001111): wrong at i = 3 (gold splits, prediction not) and i = 5.
    assert pk([5], [6], 10) == pytest.approx(2 / 8)
    assert windowdiff([5], [6], 10) == pytest.approx(2 / 8)
    # An extra cut right after the true one (0000012222): Pk misses it at i = 5 only, while
    # WindowDiff also counts i = 4, whose window holds two predicted cuts and one gold cut.
    assert pk([5], [5, 6], 10) == pytest.approx(1 / 8)
    assert windowdiff([5], [5, 6], 10) == pytest.approx(2 / 8)
    assert pk([5], [5], 10) == windowdiff([5], [5], 10) == 0.0


def test_score_pools_over_conversations() -> None:
    result = score([([5], [6], 10), ([2, 4], [], 6), ([3], [1, 3], 8)])
    # Boundaries: gold 4, predicted 3, matched 2 (6 ~ 5, 3 = 3).
    assert (result["precision"], result["recall"]) == (round(2 / 3, 3), 0.5)
    assert result["f1"] == round(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5), 3)
    assert (result["chunks"], result["gold_chunks"]) == (2 + 1 + 3, 2 + 3 + 2)
    # Pk windows pooled: 8 (k=2) + 5 (k=1) + 6 (k=2) = 19; wrong 2 + 2 + 1 (the third
    # conversation's early cut at 1 is wrong only in the window 0–2).
    assert result["pk"] == round(5 / 19, 3)


def test_the_dev_set_is_well_formed_and_split_in_halves() -> None:
    data = json.loads(DEV_SET.read_text(encoding="utf-8"))["conversations"]
    assert len(data) >= 20
    ids = [c["id"] for c in data]
    assert len(set(ids)) == len(ids)
    for c in data:
        assert c["starts"], f"{c['id']} has one topic only"
        assert all(m["role"] in ("user", "assistant") and m["text"].strip() for m in c["messages"])
        assert all(0 < s < len(c["messages"]) for s in c["starts"]), c["id"]
    tune, held = load(DEV_SET, "tune"), load(DEV_SET, "held")
    assert len(tune) + len(held) == len(data) and not {c["id"] for c in tune} & {c["id"] for c in held}


def test_replay_engine_scores_a_recorded_model_on_the_conversations_it_answered(capsys) -> None:
    from bench.chunk_quality import main, replay_replies

    fixture = DEV_SET.parents[2] / "tests" / "fixtures" / "replies" / "smollm2-135m-mlx-segmentation.json"
    recorded = replay_replies(fixture)
    engine = f"replay:{fixture}"
    assert main(["--data", str(DEV_SET), "--engine", "none", "--engine", engine, "--only-replayed",
                 "--per-conversation", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    none, replay = out["none"], out[engine]
    assert [c["id"] for c in none["conversations"]] == [c["id"] for c in replay["conversations"]] == \
        [c["id"] for c in load(DEV_SET) if c["id"] in recorded]
    assert none["gold_chunks"] == replay["gold_chunks"]
    fell_back = replay.get("fallbacks", 0)
    assert len(replay.get("fallback_reasons", [])) == fell_back <= len(recorded)
    if fell_back == len(recorded):  # every conversation fell back: the no-model segmentation, exactly
        assert replay["conversations"] == none["conversations"]
