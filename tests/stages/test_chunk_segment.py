"""No-model topic segmentation (memvault.stages.chunk_segment, memvault.stages.chunk.plan_chunks)."""

import json
from pathlib import Path

import numpy as np
import pytest

from memvault.config.settings import ChunkSettings
from stores.rows import MessageRow
from memvault.stages.chunk import EMBED_CHARS, exchanges, plan_chunks, render, turns
from memvault.stages.chunk_features import (FEATURES, PEOPLE_FEATURES, depth_scores, gap_features, people_features,
                                            shift_cue)
from memvault.stages.chunk_segment import (PEOPLE_ARRAY, PEOPLE_BIAS, PEOPLE_THRESHOLD, PEOPLE_WEIGHTS, THRESHOLD,
                                           WEIGHTS, features, gap_similarities, learned_boundaries, pick,
                                           probabilities, segment, valley_boundaries)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "segmentation"

# Two topics in one domain (git), no phrase announcing the change: the old neighbour-cosine
# rule (cut below 0.25) saw 0.28 at the change and kept one chunk.
GIT_TWO_TOPICS = [
    ("user", "I ran git stash, then switched branches, and now git stash list is empty. Are my changes gone?"),
    ("assistant", "Probably not. A dropped or popped stash is still a commit in the object database until garbage "
                  "collection runs. List dangling commits with `git fsck --no-reflog | grep commit` and look at each "
                  "with `git show <sha>`; the stash commits have messages starting with \"WIP on\"."),
    ("user", "Found it with fsck. How do I get it back?"),
    ("assistant", "Apply it directly: `git stash apply <sha>`. If you want it back in the stash list first, "
                  "`git stash store -m \"recovered\" <sha>`."),
    ("user", "Applied, everything is back."),
    ("assistant", "Good. To avoid this next time, name your stashes with `git stash push -m \"message\"` and prefer "
                  "`git stash apply` over `pop` until you are sure the changes landed."),
    ("user", "Our repo has the design system as a git submodule and after pulling, the submodule folder shows an old "
             "commit. How do I update it?"),
    ("assistant", "Run `git submodule update --init --recursive`, which checks out the commit the superproject records. "
                  "If you want the newest commit of the submodule's branch instead, use `git submodule update --remote` "
                  "and commit the new pointer in the superproject."),
    ("user", "Can git pull do that automatically?"),
    ("assistant", "Yes: `git config submodule.recurse true` makes pull, checkout and switch update submodules to the "
                  "recorded commits."),
]


def _rows(pairs: list[tuple[str, str]]) -> list[MessageRow]:
    return [MessageRow(native_id=f"m{i}", parent_native_id=None, seq=i, role=role, kind="text", text=text,
                       timestamp=None, low_value=False) for i, (role, text) in enumerate(pairs)]


def test_a_two_topic_conversation_is_split_where_the_topic_changes(embedder) -> None:
    chunks = plan_chunks(_rows(GIT_TWO_TOPICS), embedder, ChunkSettings())
    assert [[m.native_id for m in msgs] for msgs, _ in chunks] == [
        [f"m{i}" for i in range(6)], [f"m{i}" for i in range(6, 10)]]
    for _, centroid in chunks:
        assert abs(float(np.linalg.norm(centroid)) - 1.0) < 1e-5


def test_one_topic_stays_one_chunk(embedder) -> None:
    assert len(plan_chunks(_rows(GIT_TWO_TOPICS[:6]), embedder, ChunkSettings())) == 1


def test_depth_scores_by_hand() -> None:
    # Gap 1 (0.3) climbs to 0.8 on the left and 0.7 on the right: 0.5 + 0.4.
    # Gap 3 (0.6) climbs to 0.7 on the left, 0.9 on the right: 0.1 + 0.3. Peaks have depth 0.
    assert np.allclose(depth_scores([0.8, 0.3, 0.7, 0.6, 0.9]), [0.0, 0.9, 0.0, 0.4, 0.0])


def _vectors(rows: list[list[float]]) -> np.ndarray:
    v = np.array(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_boundaries_cut_deep_valleys_and_announced_shifts() -> None:
    a, b = [1.0, 0.1, 0.0], [0.1, 1.0, 0.0]
    # Three exchanges on one topic, three on another: one cut, at exchange 3.
    assert valley_boundaries(_vectors([a, a, a, b, b, b]), ["q"] * 6, floor=0.2, depth=0.3) == {3}
    # A moderate change (cosine ~0.3, above the floor, depth cuts off): no cut, unless the user
    # announces a new topic; an announcement between near-identical exchanges does not cut.
    close = _vectors([[1, 0.0, 0], [1, 0.05, 0], [0.3, 1, 0.3], [0.3, 1, 0.35]])
    assert valley_boundaries(close, ["q", "q", "q", "q"], floor=0.2, depth=2.0) == set()
    assert valley_boundaries(close, ["q", "q", "Unrelated: how do I boil an egg?", "q"], floor=0.2, depth=2.0) == {2}
    assert valley_boundaries(_vectors([a, a]), ["q", "Another question: the same thing again?"], floor=0.2, depth=2.0) == set()


def test_a_valley_above_the_floor_and_too_shallow_is_not_cut() -> None:
    # One topic drifting slowly: every gap is similar and no valley is deep, so no cut. With
    # the floor above every similarity, the one valley (the middle gap: the wide blocks see
    # most change there) is cut, and only it: a gap that is no valley is never cut.
    drift = _vectors([[1, 0.1 * i, 0] for i in range(6)])
    sims = gap_similarities(drift)
    assert min(sims) > 0.9 and int(np.argmin(sims)) == 2
    assert valley_boundaries(drift, ["q"] * 6, floor=0.4, depth=0.1) == set()
    assert valley_boundaries(drift, ["q"] * 6, floor=1.0, depth=0.1) == {3}


def test_gap_similarity_blends_the_neighbours_with_three_exchanges_each_side() -> None:
    a, b = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    # A B A A A A: the gap before the odd exchange B has neighbour cosine 0 and block cosine
    # between [A] and [B, A, A] (mean direction (2, 1)/√5 · (1, 0) = 2/√5), so the mean of both.
    sims = gap_similarities(_vectors([a, b, a, a, a, a]))
    assert sims[0] == pytest.approx((0.0 + 2 / np.sqrt(5)) / 2, abs=1e-5)
    # One odd exchange inside a topic is a valley but shallow next to a real change of topic.
    assert valley_boundaries(_vectors([a, a, a, b, b, b]), ["q"] * 6, floor=0.4, depth=0.1) == {3}


def test_a_real_annotated_dialogue_is_cut_within_one_message_of_its_gold(embedder) -> None:
    # TIAGE dev dialogue 6 (PersonaChat, human topic-shift labels; MIT, see the fixture's
    # licence): turtles and cats → the speaker's age → money and hats. Gold starts 6 and 9.
    [conv] = json.loads((FIXTURES / "tiage_dev_6.json").read_text(encoding="utf-8"))["conversations"]
    rows = [MessageRow(native_id=f"m{i}", parent_native_id=None, seq=i, role=m["role"], kind="text", text=m["text"],
                       timestamp=None, low_value=False) for i, m in enumerate(conv["messages"])]
    starts = [int(msgs[0].native_id[1:]) for msgs, _ in plan_chunks(rows, embedder, ChunkSettings())[1:]]
    assert conv["starts"] == [6, 9]
    # Both gold boundaries found, and no cut further than one message from one. The learned
    # scorer cuts at 6, 8 and 10: 8 ("how old are you?") and 10 ("are you rich?") bracket the
    # annotators' 9, where the age topic turns into money and hats.
    assert all(any(abs(p - g) <= 1 for p in starts) for g in conv["starts"]), starts
    assert all(any(abs(p - g) <= 1 for g in conv["starts"]) for p in starts), starts


def test_the_same_dialogue_read_as_two_people_is_cut_message_by_message(embedder) -> None:
    # TIAGE's speakers are both people: read so (every message `user`), each message is its own
    # unit and the people table scores the gaps. 10 ("are you rich?") sits next to the annotators'
    # 9, and 13 follows "my favorite thing to do is play with my dollies", a turn the annotators
    # kept with the hats. The gold 6 scores at the threshold itself (0.277 in fp32, 0.269 in int8 on
    # an AVX2 machine, above 0.275 on the machine the test was written on): cut or not, it is the
    # strongest gap of the first topic.
    [conv] = json.loads((FIXTURES / "tiage_dev_6.json").read_text(encoding="utf-8"))["conversations"]
    rows = [MessageRow(native_id=f"m{i}", parent_native_id=None, seq=i, role="user", kind="text", text=m["text"],
                       timestamp=None, low_value=False) for i, m in enumerate(conv["messages"])]
    starts = [int(msgs[0].native_id[1:]) for msgs, _ in plan_chunks(rows, embedder, ChunkSettings())[1:]]
    assert {10, 13} <= set(starts) <= {6, 10, 13}, starts
    groups = exchanges(rows)  # what plan_chunks scores
    table, x = features(embedder.embed([render(g)[:EMBED_CHARS] for g in groups]), [turns(g) for g in groups])
    probs = probabilities(x, PEOPLE_ARRAY, PEOPLE_BIAS)  # probs[i]: the gap before message i + 1
    assert table == "people" and int(np.argmax(probs[:8])) + 1 == 6, probs.round(3)
    assert abs(probs[5] - PEOPLE_THRESHOLD) < 0.02 or 6 in starts, probs.round(3)


def test_the_people_table_is_used_only_when_no_exchange_has_a_reply() -> None:
    v = _vectors([[1, 0, 0], [1, 0.1, 0], [0, 1, 0], [0, 1, 0.1]])
    people = [["Do you like turtles?"], ["I have two cats."], ["I go to preschool."], ["You are so young!"]]
    table, x = features(v, people)
    assert table == "people" and x.shape == (3, len(PEOPLE_FEATURES))
    assert features(v, [[*people[0], "Yes."], *people[1:]])[0] == "exchanges"
    rows = dict(zip(PEOPLE_FEATURES, people_features(v, [t[0] for t in people]).T))
    assert list(rows["prev_question"]) == [1.0, 0.0, 0.0]  # "Do you like turtles?" before the first gap
    assert list(rows["after_question"]) == [0.0, 0.0, 0.0]
    assert rows["cos_next"][1] > 0.99 and rows["cos_span"][2] == 0.0  # 2 and 3 agree; nothing after 3
    # The reply columns are always 0 between single messages; the table leaves them out.
    assert set(PEOPLE_WEIGHTS) == set(PEOPLE_FEATURES) - {"reply_opens", "reply_question", "reply_asks_you"}


def test_shift_cues() -> None:
    for text in ("Unrelated: how do I boil an egg?", "Another question about the NAS", "ok, switching to the budget app",
                 "Different thing: the UPS beeped", "Quick one: cups to grams?", "Something else. My compost smells",
                 "Also, while I'm here, cert-manager is stuck", "Last question for today: a timeline", "On to compose:"):
        assert shift_cue(text), text
    for text in ("How do I see what happened?", "Is there another way to do it?", "The last run failed",
                 "Does it cache across branches?"):
        assert not shift_cue(text), text


def test_segment_respects_cuts_and_max_chars() -> None:
    v = _vectors([[1, 0, 0]] * 5)
    assert segment(v, [10] * 5, {2}, 1000) == [(0, 2), (2, 5)]
    assert segment(v, [10] * 5, set(), 25) == [(0, 2), (2, 4), (4, 5)]
    assert segment(v[:0], [], set(), 25) == []


def test_a_chunk_label_skips_a_leading_acknowledgement() -> None:
    from memvault.stages.text import label

    assert label("Thanks. What about retention for the backups?") == "What about retention for the backups?"
    assert label("Thanks!") == "Thanks!"  # nothing better to say


# Cooking, then a request that opens an unrelated task with a greeting: the learned scorer's
# clearest case (a low cosine, no shared words, "Hello, I am looking for").
PASTA_THEN_HOTEL = [
    ("user", "My pasta always comes out sticky. What am I doing wrong?"),
    ("assistant", "Use a large pot with plenty of boiling salted water and stir in the first two minutes so the "
                  "strands do not glue together. Drain it a minute before the packet time."),
    ("user", "Should I add oil to the pasta water?"),
    ("assistant", "No need: the oil floats on top and makes the sauce slide off. Stirring does the job."),
    ("user", "And how much salt goes into the pasta water?"),
    ("assistant", "About ten grams per litre of water, added once it boils."),
    ("user", "Hello, I am looking for a cheap hotel in the centre of Cambridge for two nights."),
    ("assistant", "The Cityroomz hotel is in the centre and in the cheap price range. Shall I book it?"),
    ("user", "Yes please, two nights from Friday for one person."),
    ("assistant", "Booked: Cityroomz, two nights from Friday, reference 7GAWK763."),
]


def test_a_shift_opened_by_a_greeting_and_request_is_cut_and_one_topic_is_not(embedder) -> None:
    chunks = plan_chunks(_rows(PASTA_THEN_HOTEL), embedder, ChunkSettings())
    assert [msgs[0].native_id for msgs, _ in chunks] == ["m0", "m6"]
    assert len(plan_chunks(_rows(PASTA_THEN_HOTEL[:6]), embedder, ChunkSettings())) == 1


def test_the_hand_rule_stays_reachable(embedder) -> None:
    chunks = plan_chunks(_rows(GIT_TWO_TOPICS), embedder, ChunkSettings(boundary_method="valleys"))
    assert [msgs[0].native_id for msgs, _ in chunks] == ["m0", "m6"]


def test_the_weights_cover_every_feature_and_the_threshold_is_the_default() -> None:
    assert set(WEIGHTS) == set(FEATURES)
    assert ChunkSettings().boundary_threshold == THRESHOLD


def test_pick_takes_the_strongest_gaps_above_the_threshold_apart() -> None:
    probs = np.array([0.9, 0.5, 0.8, 0.2])  # gap i opens exchange i + 1
    assert pick(probs, 0.45, 1) == {1, 2, 3}
    assert pick(probs, 0.45, 2) == {1, 3}  # 0.5 is next to the stronger 0.9
    assert pick(probs, 0.85, 1) == {1}
    assert pick(np.zeros(0), 0.45, 1) == set()


def test_cue_features_read_the_turns_either_side_of_the_gap() -> None:
    v = _vectors([[1, 0, 0]] * 3)
    turns = [["I need a train to London.", "Booked. Anything else?"],
             ["No, thank you, goodbye.", "Have a nice day!"],
             ["Hi! Do you like turtles?", "I am more of a cat person."]]
    rows = dict(zip(FEATURES, gap_features(v, turns).T))
    assert list(rows["closing"]) == [0.0, 1.0]  # "thank you, goodbye" closes the second exchange
    assert list(rows["greeting"]) == [0.0, 1.0] and list(rows["asks_you"]) == [0.0, 1.0]
    assert list(rows["reply_question"]) == [1.0, 0.0]  # "Anything else?" ends the first exchange
    assert list(rows["request"]) == [0.0, 0.0]  # the request opens the conversation, at no gap
    assert learned_boundaries(v[:1], turns[:1]) == set()
