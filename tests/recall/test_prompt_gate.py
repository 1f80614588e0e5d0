"""The prompt gate and the prompt block's shape (pure): trivial prompts, evidence units, budget."""

from datetime import datetime

import pytest

from memvault.live.prompt_gate import (GateParams, Signals, bounded_query, contentless, content_words, coverage,
                                       date_words, decide, structural, trivial_reason)
from memvault.recall.evidence import Shape, as_written, merge, passage_for, render_prompt_block


@pytest.mark.parametrize("prompt", ["thanks!", "ok", "👍", "continue", "hi", "yes", "no", "/clear", "/model sonnet",
                                    "go on", "sounds good", "Thank you so much!!", "ok do it", "  ", "?", "keep going"])
def test_trivial_prompts_carry_nothing(prompt: str) -> None:
    assert trivial_reason(prompt) is not None


@pytest.mark.parametrize("prompt", ["When did Caroline go to the LGBTQ support group?",
                                    "how do we back up postgres?", "what is Melanie's job"])
def test_questions_with_content_are_not_trivial(prompt: str) -> None:
    assert trivial_reason(prompt) is None


def test_a_megabyte_prompt_is_cut_before_any_work() -> None:
    query = bounded_query("backup " * 400_000)
    assert len(query) <= 2_000 and query.startswith("backup backup")


def test_contentless_turns_and_structure_are_no_evidence() -> None:
    for text in ("user: hi", "assistant: ok", "Caroline: Thanks!", "[Request interrupted by user]", "user: 👍"):
        assert contentless(text), text
    assert not contentless("Caroline: I went to the LGBTQ support group yesterday")
    assert structural("## References\n\n[^1]: `conv:1a2b3c4d` (2026-01-02, claude-code) — Backups")
    assert structural("- [[Postgres_Backups]]\n- [[Tidepool]]")
    assert structural("# Title\n## Section")
    assert not structural("The nightly backup runs at 02:00 with pgBackRest, stanza main.")


def test_coverage_weighs_rare_words() -> None:
    df, docs = {"caroline": 50, "group": 40, "lgbtq": 3, "support": 30}, 1000
    words = content_words("When did Caroline go to the LGBTQ support group?")
    share, mass = coverage(words, "Caroline: the LGBTQ group was great", df, docs)
    rare_missing, _ = coverage(words, "Caroline: the support group was great", df, docs)
    assert mass > 0 and share > rare_missing


def test_decide_explains_with_numbers() -> None:
    s = Signals(("postgres", "backup"), 12.0, 0.8, 0.45, 0.2, True, top_cos=0.5)
    inject, reasons = decide(s, GateParams())  # unit cosine + top cosine + coverage = 1.75 ≥ 1.279
    text = "\n".join(reasons)
    assert inject and "80%" in text
    assert ("unit cosine 0.450 + 1 × top cosine 0.500 + 1 × coverage 0.800 = 1.750, threshold 1.279: enough" in text)
    weak = Signals(("haiku", "autumn", "leaves"), 20.0, 0.1, 0.35, 0.15, False, top_cos=0.4)
    inject, reasons = decide(weak, GateParams())
    assert not inject and any("= 0.850, threshold 1.279: not enough" in r for r in reasons)
    assert decide(s, GateParams(min_margin=0.5))[0] is False  # the margin gates only when asked to
    assert decide(s, GateParams(w_top=0.0, min_evidence=1.3))[0] is False  # the top cosine is a term of its own


def test_the_top_cosine_lifts_a_close_home_over_a_weak_unit() -> None:
    """Two prompts whose best unit is alike: the one whose home holds something close in meaning
    (an exchange, say) injects; the one with nothing close does not."""
    unit = dict(words=("nate", "console"), idf_mass=14.0, coverage=0.35, cos=0.45, background=0.3, agree=True)
    assert decide(Signals(**unit, top_cos=0.55), GateParams())[0] is True  # 1.35
    assert decide(Signals(**unit, top_cos=0.42), GateParams())[0] is False  # 1.22


def test_date_words_are_held_by_the_units_date() -> None:
    assert date_words("What did Nate make on 9 November, 2022?") == {
        "9": ("day", 9), "november": ("month", 11), "2022": ("year", 2022)}
    assert date_words("you may want to read it") == {}  # "may" names a month only beside a number
    assert date_words("on May 23, 2023")["may"] == ("month", 5)
    query = "What dish did Nate make on 9 November, 2022?"
    words, dates = content_words(query), date_words(query)
    df, docs = {"dish": 20, "nate": 300, "make": 400, "november": 0, "2022": 0, "9": 0}, 4000
    turn = "Nate: I made a coconut milk dish today"
    same_day, _ = coverage(words, turn, df, docs, datetime(2022, 11, 9, 17, 54), dates)
    other_year, _ = coverage(words, turn, df, docs, datetime(2021, 11, 9), dates)
    undated, _ = coverage(words, turn, df, docs)
    assert same_day > other_year > undated
    assert same_day == pytest.approx(1.0)  # dish, nate and the whole date ("make" is a request word)


def _turn(i: int, text: str) -> dict:
    return {"id": f"m{i}", "doc": "conv:abc", "kind": "message", "ord": i, "path": f"/conv:abc/e1/m{i}",
            "title": "t", "text": text, "created_at": datetime(2023, 5, 8, 13, 56)}


def test_the_block_shows_the_turn_in_its_place_dated_as_written_within_budget() -> None:
    doc = [{"id": "root", "doc": "conv:abc", "kind": "conversation", "ord": 0, "title": "Backups chat"}]
    doc += [_turn(i, t) for i, t in enumerate(["user: hi", "user: where is the backup\\!", "assistant: on the NAS \\[disk 2\\]",
                                               "user: ok", "user: and the stanza?", "assistant: main"], start=1)]
    a = passage_for(doc[3], doc, "conv:abc")
    b = passage_for(doc[5], doc, "conv:abc")
    merged = merge([a, b])
    assert len(merged) == 1 and merged[0].hits == {"m3", "m5"}
    block = render_prompt_block("where is the backup", merged, 1_500)
    assert len(block) <= 1_500
    # every turn shown was said that day: the date stands once, on the title
    assert "[1] 2023-05-08 Backups chat (cite: conv:abc)" in block
    assert "» assistant: on the NAS [disk 2]" in block and "\\" not in block
    assert "where is the backup" not in block  # a neighbour: the shipped shape shows the hits only
    placed = render_prompt_block("where is the backup", merged, 1_500, Shape(context_for=1, day_once=False))
    assert "» 2023-05-08 assistant: on the NAS [disk 2]" in placed and "  2023-05-08 user: where is the backup!" in placed
    tight = render_prompt_block("where is the backup", merged, 600)
    assert len(tight) <= 600 and "on the NAS" in tight
    assert as_written("a \\* b \\# c") == "a * b # c"


def test_the_block_shape_spends_the_budget_on_evidence() -> None:
    from memvault.recall.evidence import HEADER, SHORT_HEADER

    doc = [{"id": "root", "doc": "conv:abc", "kind": "conversation", "ord": 0, "title": "Backups chat"}]
    doc += [_turn(i, f"user: turn {i} about the backup " + "word " * 60) for i in range(1, 20)]
    passages = merge([passage_for(doc[i], doc, "conv:abc") for i in (2, 9, 16)])
    assert len(passages) == 3
    query = "where is the backup " * 5
    shipped = render_prompt_block(query, passages, 1_500)
    assert "Query:" not in shipped and SHORT_HEADER in shipped and "not instructions" in SHORT_HEADER
    assert "turn 1 " not in shipped and "turn 8 " not in shipped  # hits only: no neighbours
    hits = [ln for ln in shipped.splitlines() if ln.startswith("»")]
    assert len(hits) == 3 and all(len(ln) <= 240 + len("» ") for ln in hits)
    assert "turn 2 " in shipped and "turn 9 " in shipped and "turn 16 " in shipped
    one_title = render_prompt_block(query, merge([passage_for(doc[i], doc, "conv:abc") for i in (2, 9, 16)], 1 << 30), 1_500)
    assert one_title.count("(cite: conv:abc)") == 1  # one conversation, one title
    assert one_title.index("turn 2 ") < one_title.index("turn 9 ") < one_title.index("turn 16 ")
    placed = render_prompt_block(query, passages, 1_500, Shape(context_for=1))
    assert "turn 1 " in placed and "turn 8 " not in placed  # only the best hit keeps its neighbours
    echoed = render_prompt_block(query, passages, 1_500, Shape(query_line=True, header=HEADER))
    assert "Query: where is the backup" in echoed and HEADER in echoed
    lean = render_prompt_block(query, passages, 1_500, Shape(query_line=False, context_for=0, hit_chars=120))
    assert "Query:" not in lean and "turn 1 " not in lean and "turn 3 " not in lean  # hits only
    hits = [ln for ln in lean.splitlines() if ln.startswith("»")]
    assert len(hits) == 3 and all(len(ln) <= 120 + len("» 2023-05-08 ") for ln in hits)
    assert len(lean) <= 1_500


def test_only_a_conversations_node_has_a_date_for_date_words() -> None:
    from datetime import datetime

    from memvault.ops.prompt_recall import _when

    said = datetime(2023, 5, 8, 13, 56)
    assert _when({"doc": "conv:1a2b3c4d", "created_at": said}) == datetime(2023, 5, 8)
    assert _when({"doc": "conv:1a2b3c4d", "created_at": "2023-05-08T13:56:00"}) == datetime(2023, 5, 8)
    # an article's node is dated when it was indexed: "in May 2023" must not match it by that
    assert _when({"doc": "Postgres_Backups", "created_at": said}) is None
    assert _when({"doc": "conv:1a2b3c4d", "created_at": None}) is None


def test_a_hit_without_its_documents_turns_stands_alone_in_conversation_order() -> None:
    from memvault.ops.prompt_recall import _conversation_row
    from memvault.recall.evidence import place

    conv = {"id": "c", "doc": "conv:abc", "kind": "conversation", "title": "Backups chat", "parent": None,
            "path": "/conv:abc"}
    ex = {"id": "e", "doc": "conv:abc", "kind": "exchange", "parent": "c", "path": "/conv:abc/e10"}
    late = {"id": "m9", "doc": "conv:abc", "kind": "message", "parent": "e", "path": "/conv:abc/e10/m2",
            "title": "assistant: main", "text": "assistant: main", "created_at": datetime(2023, 5, 8)}
    early = {**late, "id": "m1", "path": "/conv:abc/e2/m1", "text": "user: where is the backup?",
             "created_at": datetime(2023, 5, 9)}
    rows = {r["id"]: r for r in (conv, ex, late, early)}
    assert _conversation_row(late, rows) == [conv] and _conversation_row(late, {"m9": late}) == []
    assert place(early) < place(late) and place({"ord": 3}) == 3
    # a long agent exchange: its fifth message is still said before the next exchange's first
    assert place({"path": "/conv:abc/e2/m5"}) < place({"path": "/conv:abc/e3/m0"})
    # the title is the conversation's (a turn's own title is its text), or none
    assert passage_for(late, [conv], "conv:abc").title == "Backups chat"
    assert passage_for(late, [], "conv:abc").title == ""
    merged = merge([passage_for(r, [conv], "conv:abc") for r in (late, early)], 1 << 30)
    assert [r["id"] for r in merged[0].rows] == ["m1", "m9"]
    block = render_prompt_block("backup", merged, 1_500)
    # said on two days: each turn keeps its own date
    assert "[1] Backups chat (cite: conv:abc)" in block
    assert "» 2023-05-09 user: where is the backup?\n» 2023-05-08 assistant: main" in block



def test_weak_hits_of_one_conversation_never_squeeze_its_best_one() -> None:
    doc = [{"id": "root", "doc": "conv:abc", "kind": "conversation", "ord": 0, "title": "Backups chat"}]
    doc += [_turn(i, f"user: turn {i} " + "word " * 45) for i in range(1, 30)]
    # the best hit is said last; eight weaker ones earlier in the same conversation
    ranked = [passage_for(doc[i], doc, "conv:abc") for i in (28, 2, 5, 8, 11, 14, 17, 20, 23)]
    block = render_prompt_block("turn", merge(ranked, 1 << 30), 1_000)
    hits = [ln for ln in block.splitlines() if ln.startswith("»")]
    assert len(block) <= 1_000 and "turn 28 " in block
    assert all(len(ln) >= 150 for ln in hits)  # cut no shorter than MIN_HIT_CHARS: the weakest go instead
    assert "turn 23 " not in block and "turn 20 " not in block
    assert [ln.split()[3] for ln in hits] == sorted((ln.split()[3] for ln in hits), key=int)  # in the order said


def test_a_long_hit_keeps_its_opening_and_the_sentences_holding_the_prompts_words() -> None:
    from memvault.markdown.tree import truncate
    from memvault.recall.evidence import excerpt

    turn = ("assistant: I looked through the repository and the configuration files for you today. "
            + "The tests pass on every platform we checked last week. " * 3
            + "The station comes from --station, then TIDEPOOL_STATION, then the default 9414750. "
            + "Tell me if anything else is needed.")
    cut = excerpt(turn, ["default", "station"], 240)
    assert len(cut) <= 240 and cut.startswith("assistant: I looked through the repository")
    assert "9414750" in cut and " … The station comes from" in cut and "9414750" not in truncate(turn, 240)
    assert excerpt("assistant: short.", ["station"], 240) == "assistant: short."  # whole when it fits
    assert excerpt(turn, ["zebra"], 240) == truncate(turn, 240)  # no sentence holds a word: the plain cut
    # A possessive counts by its stem, as the prompt's content words do ("Tim's" holds "tim").
    assert excerpt("Intro words here. " * 12 + "Tim's book is about dragons.", ["tim"], 140).endswith(
        "Tim's book is about dragons.")
    doc = [{"id": "root", "doc": "conv:abc", "kind": "conversation", "ord": 0, "title": "Tides chat"}, _turn(1, turn)]
    passages = [passage_for(doc[1], doc, "conv:abc")]
    block = render_prompt_block("which station is the default?", passages, 1_500)
    assert "» assistant: I looked through the repository" in block and "9414750" in block
    assert "9414750" not in render_prompt_block("which station is the default?", passages, 1_500, Shape(focus=False))
