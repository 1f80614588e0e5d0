"""Tree parsing of articles and conversations: paths, nesting, size limits."""

from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.markdown.tree import (
    PARAGRAPH_CHARS,
    SECTION_CHARS,
    TreeNode,
    article_nodes,
    conversation_nodes,
    split_text,
    truncate,
)

ARTICLE = """---
title: Vector Search
tags: [search]
---
# Vector Search

Vector search finds text by meaning. It complements lexical search.

## Indexes

An index trades recall for speed.

### IVF-PQ

Partitions the space, then quantizes.

## Indexes

A second section with the same title.

## Trade-offs / costs #1

- fast
- approximate

## References

[^1]: https://example.com/ann
[^2]: Malkov and Yashunin, HNSW.
"""


def by_path(nodes: list[TreeNode]) -> dict[str, TreeNode]:
    return {n.path: n for n in nodes}


def assert_well_formed(nodes: list[TreeNode]) -> None:
    paths = [n.path for n in nodes]
    assert len(paths) == len(set(paths)), "paths must be unique within a document"
    assert [n.order for n in nodes] == list(range(len(nodes)))
    known = set()
    for n in nodes:
        assert n.parent is None or n.parent in known, f"{n.path} appears before its parent"
        known.add(n.path)
        if n.kind == "paragraph" or n.kind == "message":
            assert len(n.text) <= PARAGRAPH_CHARS
        else:
            assert len(n.text) <= SECTION_CHARS


def test_article_tree_paths_and_nesting() -> None:
    nodes = article_nodes("Vector_Search", ARTICLE)
    assert_well_formed(nodes)
    tree = by_path(nodes)
    root = nodes[0]
    assert root.path == "/Vector_Search" and root.kind == "article" and root.parent is None
    assert root.title == "Vector Search"
    assert root.text == "Vector Search\n\nVector search finds text by meaning. It complements lexical search."
    assert tree["/Vector_Search#p1"].parent == "/Vector_Search"
    assert tree["/Vector_Search/Indexes"].text == "Indexes\n\nAn index trades recall for speed."
    assert tree["/Vector_Search/Indexes/IVF-PQ"].parent == "/Vector_Search/Indexes"
    assert tree["/Vector_Search/Indexes~2"].title == "Indexes"
    assert tree["/Vector_Search/Indexes~2#p1"].text == "A second section with the same title."
    # "/" and "#" never leak into a segment
    assert tree["/Vector_Search/Trade-offs_-_costs_-1#p1"].text == "- fast\n- approximate"
    # line numbers are the source's (front matter counted)
    assert tree["/Vector_Search/Indexes"].line == 9


def test_references_section_keeps_footnote_definitions() -> None:
    tree = by_path(article_nodes("Vector_Search", ARTICLE))
    refs = tree["/Vector_Search/References"]
    assert refs.kind == "section"
    # a bare "[^1]: url" is a link reference definition to markdown-it; it must not vanish
    assert "[^1]: https://example.com/ann" in refs.text
    assert "Malkov" in refs.text
    assert "title: Vector Search" not in " ".join(n.text for n in tree.values())


def test_numbered_sections_dot_style() -> None:
    src = "# Plan\n\n1. Background\n\nWhy we do this.\n\n2. Method\n\nHow we do it.\n\n- step a\n- step b\n"
    nodes = article_nodes("Plan", src)
    assert_well_formed(nodes)
    tree = by_path(nodes)
    assert tree["/Plan/Background"].kind == "section"
    assert tree["/Plan/Background"].text == "Background\n\nWhy we do this."
    assert tree["/Plan/Method#p2"].text == "- step a\n- step b"


def test_numbered_sections_loose_list_items() -> None:
    src = "1. Background\n\n   Why we do this.\n\n2. Method\n\n   How we do it.\n"
    tree = by_path(article_nodes("Plan", src))
    assert tree["/Plan/Background#p1"].text == "Why we do this."
    assert tree["/Plan/Method#p1"].text == "How we do it."


def test_ordinary_ordered_list_stays_a_paragraph() -> None:
    tree = by_path(article_nodes("Todo", "Shopping:\n\n1. milk\n2. eggs\n"))
    assert tree["/Todo#p2"].text == "1. milk\n2. eggs"
    assert all(n.kind != "section" for n in tree.values())


def test_cjk_numbered_sections_nest_under_heading() -> None:
    src = "# 计划\n\n## 总览\n\n一、背景\n我们为什么做这件事。\n\n二、方法\n\n具体怎么做。\n\n## 附录\n\n其他。\n"
    nodes = article_nodes("计划", src)
    assert_well_formed(nodes)
    tree = by_path(nodes)
    assert tree["/计划/总览/一、背景"].text == "一、背景\n\n我们为什么做这件事。"
    assert tree["/计划/总览/二、方法#p1"].text == "具体怎么做。"
    # a later heading closes the numbered sections
    assert tree["/计划/附录"].parent == "/计划"


def test_no_heading_document_degrades_to_paragraphs() -> None:
    nodes = article_nodes("Loose_Note", "First thought.\n\nSecond thought.\n")
    assert [n.path for n in nodes] == ["/Loose_Note", "/Loose_Note#p1", "/Loose_Note#p2"]
    assert nodes[0].title == "Loose Note"
    assert nodes[0].text == "Loose Note\n\nFirst thought."


def test_long_paragraph_splits_on_sentences() -> None:
    sentence = "This sentence is about forty-five characters. "
    src = "# Long\n\n## Part\n\n" + sentence * 60 + "\n"
    nodes = article_nodes("Long", src)
    assert_well_formed(nodes)
    pieces = [n for n in nodes if n.kind == "paragraph"]
    assert len(pieces) >= 3
    assert [p.path for p in pieces[:2]] == ["/Long/Part#p1", "/Long/Part#p1~2"]
    assert all(p.text.endswith("characters.") for p in pieces)
    section = by_path(nodes)["/Long/Part"]
    assert len(section.text) <= SECTION_CHARS and section.text.endswith("characters.")


def test_long_cjk_paragraph_splits_on_cjk_punctuation() -> None:
    sentence = "向量检索通过语义寻找文本，它与词法检索互补。"
    src = "# 检索\n\n" + sentence * 80 + "\n"
    nodes = article_nodes("检索", src)
    assert_well_formed(nodes)
    pieces = [n for n in nodes if n.kind == "paragraph"]
    assert len(pieces) >= 2
    assert all(p.text.endswith("。") for p in pieces)
    assert "".join(p.text for p in pieces) == sentence * 80
    assert len(nodes[0].text) <= SECTION_CHARS


def test_split_text_without_any_boundary_still_respects_limit() -> None:
    pieces = split_text("字" * 2000, 900)
    assert [len(p) for p in pieces] == [900, 900, 200]
    assert len(truncate("word " * 400, 100)) <= 100


def test_conversation_nodes() -> None:
    messages = [
        ("m0", "system", "You are helpful.", None),
        ("m1", "user", "How do I rebuild the index?", "2024-05-01T10:00:00"),
        ("m2", "assistant", "Run the reindex command. " * 60, None),
        ("m3", "tool", "ok", None),
        ("m4", "user", "Thanks!", None),
        ("m5", "assistant", "   ", None),
    ]
    nodes = conversation_nodes("f" * 64, "ffffffff", "Reindexing", "2024-05-01", "codex", messages)
    assert_well_formed(nodes)
    tree = by_path(nodes)
    root = tree["/conv:ffffffff"]
    assert root.kind == "conversation" and root.ref == "f" * 64
    assert root.text == "Reindexing\n2024-05-01\ncodex"
    # messages before the first user turn open an exchange of their own
    assert tree["/conv:ffffffff/e1/m1"].text == "system: You are helpful."
    e2 = tree["/conv:ffffffff/e2"]
    assert e2.kind == "exchange" and e2.text.startswith("user: How do I rebuild the index?\nassistant: Run")
    assert "tool:" not in e2.text
    assert e2.timestamp == "2024-05-01T10:00:00"
    long_reply = [n for n in nodes if n.ref == "m2"]
    assert [n.path for n in long_reply][:2] == ["/conv:ffffffff/e2/m2", "/conv:ffffffff/e2/m2~2"]
    assert all(n.text.startswith("assistant: ") for n in long_reply)
    assert tree["/conv:ffffffff/e2/m3"].ref == "m3"
    # empty messages get no node
    assert [n.path for n in nodes if n.parent == "/conv:ffffffff/e3"] == ["/conv:ffffffff/e3/m1"]


LINES = st.sampled_from(
    ["# T", "## A", "## A", "### B", "1. One", "2. Two", "一、甲", "- item", "> quote", "```", "[^1]: note",
     "[x]: http://x", "---", "", "", "text. " * 40, "字。" * 500, "A / B # C", "| a | b |", "|---|---|"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.text(max_size=30)), max_size=40))
def test_any_markdown_gives_a_well_formed_tree(lines: list[str]) -> None:
    nodes = article_nodes("Doc", "\n".join(lines))
    assert nodes[0].path == "/Doc"
    assert_well_formed(nodes)
