"""Low-content chunks (image placeholders, bare commands, git output) never found a bucket."""

from typing import Any

from memvault.engines.none import NoneEngine
from memvault.hygiene.noise import discussion_words, is_low_content
from memvault.stages.cluster import run_cluster
from memvault.stages.cluster_projects import apart_matrix, other_project, related

THIN = [
    "user: [image: file_00000000aaaa (IMG_2231.jpeg)]",
    "user: [image: file_00000000bbbb (IMG_2232.jpeg)]",
    "user: /mode\nassistant: Mode set.",
    "user: /mode\nassistant: Mode changed.",
    "tool: [main 4be21c9] Release 1.4.0\n 3 files changed, 10 insertions(+)\n create mode 100644 packages/cli/CHANGELOG.md",
    "tool: [main 5cf3200] Release 1.4.1\n 2 files changed, 4 insertions(+)\n create mode 100644 packages/cli/NOTES.md",
]


def test_low_content_is_judged_on_discussion_words() -> None:
    assert all(is_low_content(t) for t in THIN)
    assert discussion_words("user: commit and push\nassistant: Done.\n[main 1a2b3c4] x\n create mode 100644 a/b") == 4
    talk = ("user: What plant is this and is it safe for dogs? [image: file_1 (IMG.jpeg)]\n"
            "assistant: It looks like a monstera; its leaves irritate a dog's mouth.")
    assert not is_low_content(talk)


def test_projects_are_related_by_folder() -> None:
    assert related("/Users/sam/src/tidepool", "/Users/sam/src/tidepool/crates/cli")
    assert not related("/Users/sam/src/tide", "/Users/sam/src/tidepool")
    assert other_project("/a", ["/b"]) and not other_project("/a", ["/b", "/a"])
    assert not other_project(None, ["/b"]) and not other_project("/a", [])
    assert apart_matrix(["/a", "/b", None, "/a/x"]).tolist() == [
        [0, 1, 0, 0], [1, 0, 0, 1], [0, 0, 0, 0], [0, 1, 0, 0]]


def test_low_content_chunks_found_no_bucket_but_are_counted(make_ctx: Any, embedder: Any) -> None:
    ctx = make_ctx(NoneEngine())
    cid = ctx.ledger.conversations_to_chunk()[0]
    vectors = embedder.embed(THIN)
    for i, (text, vector) in enumerate(zip(THIN, vectors)):
        ctx.ledger.add_chunk(f"thin{i}", cid, [f"x{i}"], text[:40], text, vector.astype(float).tolist(), "r1")
    result = run_cluster(ctx)
    assert result.buckets_new == 0 and not ctx.ledger.buckets()
    assert result.low_content == len(THIN) and result.waiting == len(THIN)
