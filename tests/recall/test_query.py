"""Query features recall scoring can use: exact tokens, the period a query names, when- and guess-questions."""

from datetime import datetime

from memvault.recall.query import asks_guess, asks_when, exact_tokens, has_temporal_cue, named_period


def test_exact_tokens_are_numbers_ids_and_names() -> None:
    assert exact_tokens("What did Caroline say about PR-1432 and db_backup.sh?") == ["caroline", "pr", "1432", "db",
                                                                                      "backup", "sh"]
    assert exact_tokens("How old was she on her 18th birthday?") == ["18th"]
    # the first word of a question is capitalised, not a name; function words never count
    assert exact_tokens("When did the backups move?") == []
    assert exact_tokens("Does I matter?") == []


def test_named_period_most_precise_first() -> None:
    day = named_period("What is Joanna creating for YouTube on 9 November, 2022?")
    assert day is not None and (day.start, day.end) == (datetime(2022, 11, 9), datetime(2022, 11, 10))
    us = named_period("What happened on November 9th, 2022?")
    assert us is not None and us.start == datetime(2022, 11, 9)
    month = named_period("What class did Maria start in December 2023?")
    assert month is not None and (month.start, month.end) == (datetime(2023, 12, 1), datetime(2024, 1, 1))
    year = named_period("What state did Joanna visit in 2021?")
    assert year is not None and (year.start, year.end) == (datetime(2021, 1, 1), datetime(2022, 1, 1))
    assert named_period("What did Nate win?") is None
    assert named_period("We met 31 February 2023, or in May 2023") is not None  # an impossible day falls through


def test_period_holds_with_slack_after() -> None:
    month = named_period("in May 2023")
    assert month is not None
    assert month.holds(datetime(2023, 5, 31, 23), 0)
    assert not month.holds(datetime(2023, 6, 10), 0) and month.holds(datetime(2023, 6, 10), 14)
    assert not month.holds(datetime(2023, 4, 30), 14)  # never before the period


def test_when_questions_and_temporal_cues() -> None:
    assert asks_when("When did Caroline go to the support group?")
    assert asks_when("How long ago was Caroline's 18th birthday?")
    assert not asks_when("What did Caroline do at the support group?")
    assert has_temporal_cue("I went there last Saturday")
    assert has_temporal_cue("Yesterday was great") and has_temporal_cue("back in 2019")
    assert not has_temporal_cue("I love painting landscapes")


def test_guess_questions() -> None:
    assert asks_guess("Would Caroline pursue writing as a career option?")
    assert asks_guess("What might John's financial status be?")
    assert asks_guess("What pets wouldn't cause any discomfort to Joanna?")
    assert asks_guess("Is Melanie likely to go camping again?")
    assert not asks_guess("What books has Melanie read?")
    assert not asks_guess("When did Caroline go to the support group?")
    # a request, or no one named: not a guess about someone
    assert not asks_guess("Could you fix the bug in the Postgres backup?")
    assert not asks_guess("Which approach would work better for the importer?")
