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
    out = json.loads(capsys.readouterr().out)[str(DEV_SET)]
    none, replay = out["none"], out[engine]
    assert [c["id"] for c in none["conversations"]] == [c["id"] for c in replay["conversations"]] == \
        [c["id"] for c in load(DEV_SET) if c["id"] in recorded]
    assert none["gold_chunks"] == replay["gold_chunks"]
    fell_back = replay.get("fallbacks", 0)
    assert len(replay.get("fallback_reasons", [])) == fell_back <= len(recorded)
    if fell_back == len(recorded):  # every conversation fell back: the no-model segmentation, exactly
        assert replay["conversations"] == none["conversations"]


# --- the public sets' readers, on fixtures written here in each set's format -----------------

from bench.segmentation_sets import load_set, read_any, read_tadam, read_tiage, read_unified  # noqa: E402


def test_tiage_reader_marks_the_utterances_labelled_1(tmp_path: Path) -> None:
    path = tmp_path / "anno_dev.json"
    path.write_text(json.dumps({"7": [["hi there", "-1"], ["hello , i like dogs", "0"], ["do you cook ?", "1"],
                                      ["yes , pasta mostly", "0"], ["i work nights at a bakery", "1"]]}))
    [conv] = read_tiage(path)
    assert conv["id"] == "tiage-7" and conv["starts"] == [2, 4]
    # Two people: both read as `user`, so either may open a topic (the gold is the same either way).
    assert [m["role"] for m in conv["messages"]] == ["user"] * 5
    assert conv["messages"][3]["text"] == "yes , pasta mostly"
    assert read_any(path) == [conv]
    [pairs] = read_tiage(path, people=False)
    assert [m["role"] for m in pairs["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert pairs["starts"] == conv["starts"]


def test_unified_reader_turns_segment_lengths_into_starts_and_splits(tmp_path: Path) -> None:
    path = tmp_path / "dialseg_711.json"
    dialogues = [{"dial_id": n, "utterances": ["a", "b", "c", "d", "e"], "segments": [2, 3], "set": "test"}
                 for n in range(4)] + [{"dial_id": 9, "utterances": ["x", "y"], "segments": [1, 1], "set": "dev"}]
    path.write_text(json.dumps(dialogues))
    everything = read_unified(path)
    assert [c["starts"] for c in everything] == [[2]] * 4 + [[1]]
    assert [c["id"] for c in read_unified(path, "dev")] == ["dialseg_711-9"]
    # Every 3rd test dialogue moves to dev (0 and 3), the rest stay test.
    assert [c["id"] for c in read_unified(path, "dev", "d", dev_every=3)] == ["d-0", "d-3", "d-9"]
    assert [c["id"] for c in read_unified(path, "test", "d", dev_every=3)] == ["d-1", "d-2"]
    assert read_any(path) == everything


def test_unified_reader_names_a_dialogue_whose_segments_do_not_add_up(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"dial_id": 3, "utterances": ["a", "b"], "segments": [1, 2], "set": "test"}]))
    with pytest.raises(ValueError, match=r"bad.json: dialogue 3 has segments summing to 3 for 2 utterances"):
        read_unified(path)


def test_tadam_reader_starts_a_topic_where_the_number_changes(tmp_path: Path) -> None:
    path = tmp_path / "en_dataset_reference_2.txt"
    path.write_text("call_id_0\n0 book a table for two\n0 which night?\n1 and a taxi to the station\n1 done\n"
                    "call_id_1\n0 weather in leeds\n0 rain\n0 ok\n2 remind me to call mum\n")
    convs = read_tadam(path)
    assert [(c["id"], c["starts"], len(c["messages"])) for c in convs] == [("dialseg711-0", [2], 4), ("dialseg711-1", [3], 4)]
    assert convs[0]["messages"][2] == {"role": "user", "text": "and a taxi to the station"}
    assert read_any(path) == convs
    path.write_text("call_id_0\n0 fine\nnot a numbered line\n")
    with pytest.raises(ValueError, match=r"en_dataset_reference_2.txt:3: expected"):
        read_tadam(path)


def test_named_sets_say_what_is_missing_and_the_dev_file_splits_into_ours_and_synthetic(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="tiage.*is missing; clone"):
        load_set("tiage:dev", tmp_path)
    with pytest.raises(SystemExit, match="unknown set"):
        load_set("nothing-like-this", tmp_path)
    ours, synthetic = load_set("ours", tmp_path), load_set("synthetic", tmp_path)
    assert ours and synthetic and len(ours) + len(synthetic) == len(load(DEV_SET))
    assert not any(c["id"].startswith("synthetic-") for c in ours)


def test_main_scores_each_set_on_its_own(tmp_path: Path, capsys) -> None:
    from bench.chunk_quality import main

    path = tmp_path / "anno_test.json"
    path.write_text(json.dumps({"1": [["i love hiking in the alps every summer", "-1"], ["the alps are great for hiking", "0"],
                                      ["my favourite food is sushi", "1"], ["sushi with salmon is the best", "0"]]}))
    assert main(["--data", str(path), "--set", "ours", "--embed-cache", str(tmp_path / "emb.pkl"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == [str(path), "ours"]
    assert out[str(path)]["none"]["gold_chunks"] == 2 and out[str(path)]["none"]["conversations_scored"] == 1
    assert (tmp_path / "emb.pkl").is_file()  # embeddings kept for the next run
