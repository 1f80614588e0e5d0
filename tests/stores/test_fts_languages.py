"""Full text in every language: Chinese and Japanese phrases inside longer runs of text,
accented Latin and Cyrillic found without their accents or case — through the node index's
own full-text search, with no vector at all (what recall falls back to when the index waits
for `memvault reindex`). An index built with the older tokenizer is re-tokenized in place."""

from pathlib import Path

import numpy as np
import pytest
from lancedb.index import FTS

from stores.nodes import NodeIndex
from stores.nodes_write import FTS_KEY, FTS_TOKENIZER
from tests.helpers import synthetic_rows

TEXTS = {
    "zh": "我们昨天讨论了数据库备份的时间安排，决定每天凌晨三点运行",
    "ja": "明日の会議は東京本社で午後三時に始まりますので資料を準備してください",
    "ru": "Мы обсуждали резервное копирование базы данных на прошлой неделе",
    "fr": "Le café était très agréable à Montréal pendant la conférence",
    "en": "the postgres backups run nightly and are kept for thirty days",
}


def _index(tmp_path: Path) -> NodeIndex:
    rows = synthetic_rows(len(TEXTS) + 10, np.random.default_rng(0))
    for row, text in zip(rows, TEXTS.values()):
        row["text"] = text
    index = NodeIndex(str(tmp_path / "nodes.lance"), "fake-16", 16)
    index.upsert(rows)
    return index


def _fts_ids(index: NodeIndex, query: str) -> list[str]:
    vector_hits, fts_hits = index.recall_search(None, query, 3)
    assert vector_hits == []
    return [h["id"] for h in fts_hits]


@pytest.mark.parametrize("query, lang", [
    ("数据库备份", "zh"),        # a phrase inside a longer run of Chinese characters
    ("备份", "zh"),
    ("東京で会議", "ja"),        # Japanese, with a particle between the words
    ("会議", "ja"),
    ("копирование", "ru"),
    ("РЕЗЕРВНОЕ КОПИРОВАНИЕ", "ru"),  # Cyrillic, other case
    ("cafe agreable", "fr"),     # accents folded
    ("Montreal", "fr"),
    ("backup", "en"),            # English still stemmed
])
def test_a_native_language_phrase_finds_its_node(tmp_path: Path, query: str, lang: str) -> None:
    index = _index(tmp_path)
    index.ensure_fts()
    want = f"n{list(TEXTS).index(lang)}"
    assert _fts_ids(index, query)[:1] == [want]
    assert index.fts_tokenizer() == FTS_TOKENIZER


def test_an_index_of_the_older_tokenizer_is_re_tokenized_by_the_next_write(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for column in ("text", "fts_text"):  # what memvault wrote before: the `simple` tokenizer, unrecorded
        index.nodes.create_index(column, config=FTS(with_position=False), replace=True)
    assert index.fts_tokenizer() is None and not index.fts_current()
    assert _fts_ids(index, "数据库备份") == []  # a run of CJK characters is one token there
    assert "fts" in index.ensure_indexes(ann_threshold=10_000)
    assert index.fts_current() and index.fts_tokenizer() == FTS_TOKENIZER
    assert _fts_ids(index, "数据库备份")[:1] == ["n0"]
    assert index.meta.search().where(f"key = '{FTS_KEY}'").limit(5).to_list()[0]["value"] == FTS_TOKENIZER


def test_a_query_vector_of_another_width_is_refused_not_searched(tmp_path: Path) -> None:
    from memvault.errors import IndexMismatchError

    index = _index(tmp_path)
    index.ensure_fts()
    with pytest.raises(IndexMismatchError, match="32-dimension query vector.*16 dimensions"):
        index.recall_search(np.ones(32, dtype=np.float32) / np.sqrt(32), "backup", 3)
