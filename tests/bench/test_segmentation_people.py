"""bench/segmentation_people.py: the tried variants of the people table, their features and decoders."""

import numpy as np

from bench.segmentation_people import columns, context, first_last, top_k, window, words
from memvault.stages.chunk_features import PEOPLE_FEATURES, people_features


def _conv(texts: list[str], rows: list[list[float]]) -> dict[str, object]:
    v = np.array(rows, dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return {"v": v, "texts": texts, "x": people_features(v, texts), "starts": [], "n": len(texts)}


CONV = _conv(["i have two cats at home .", "cats are lovely , mine sleeps all day .",
              "that is nice . do you play guitar ?", "yes , guitar and drums in a band ."],
             [[1, 0.1, 0], [1, 0.2, 0], [0.1, 1, 0], [0.1, 1, 0.1]])


def test_first_and_last_sentence() -> None:
    assert first_last("that is nice . do you play guitar ?") == ("that is nice .", "do you play guitar ?")
    assert first_last("hi") == ("hi", "hi")
    # A lone "." or "!" is not a sentence.
    assert first_last("wow ! ! i love it .") == ("wow !", "i love it .")


def test_words_see_new_content_and_its_return() -> None:
    rows = words(CONV)
    assert rows.shape == (3, 6)
    # The second gap opens "that is nice . do you play guitar ?": both content words (play, guitar)
    # are new, and one of them comes back in the next message.
    assert list(rows[1, :2]) == [1.0, 0.5]
    # The first gap: of cat, lovely, sleep, "cats" was said before it.
    assert np.isclose(rows[0, 0], 2 / 3)


def test_window_and_context_have_one_row_per_gap() -> None:
    w = window(CONV)
    assert w.shape == (3, 17)
    # The cross cosine of the messages right next to the gap is the sixth (before g-1, after g).
    v = CONV["v"]
    assert isinstance(v, np.ndarray)
    assert np.isclose(w[1, 6], float(v[1] @ v[2]))
    c = context(CONV)
    assert c.shape == (3, 8)
    # Ranks within the conversation run from 0 (the highest logit) to 1.
    assert sorted(c[:, 5]) == [0.0, 0.5, 1.0]
    assert columns(CONV, ("window", "words")).shape == (3, len(PEOPLE_FEATURES) + 17 + 6)


def test_top_k_takes_the_expected_count_two_apart() -> None:
    p = np.array([0.9, 0.8, 0.1, 0.7, 0.1, 0.1])  # sum 2.7: k 3 at scale 1
    # Cut 2 is next to cut 1 and cuts 3 and 5 next to cut 4: the third is 6.
    assert top_k(p, 1.0, 0.0) == {1, 4, 6}
    assert top_k(p, 1.0, 0.5) == {1, 4}
    assert top_k(p, 0.4, 0.0) == {1}
