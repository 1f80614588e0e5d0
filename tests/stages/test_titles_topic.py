"""No-model names against what a reader would choose: a title names the topic, not a thing
mentioned in it or the assistant the conversation was held with; a conversation of unrelated
topics does not make one bucket. Real embedding model (the phrases are weighed by their cosine
to the chunks), hand-built chunks shaped like the samples'."""

from datetime import datetime
from typing import Any

from memvault.embeddings.minilm import MiniLMEmbedder
from memvault.naming.headings import section_heading
from memvault.naming.phrase_similarity import similarity_to, unit_mean
from stores.rows import ChunkRow
from memvault.stages.cluster import name_group
from memvault.stages.synthesize_extractive import compose_article

# A starter with a name, discussed over four chunks: the name is in every one.
SOURDOUGH = [
    "user: My sourdough starter, Bubbles, has been sluggish since the kitchen cooled down. It used to double in "
    "five hours and now it takes nine.\nassistant: Most likely temperature. Keep the sourdough starter at 24 to 25 "
    "degrees and Bubbles will double in five hours again.",
    "user: Another thing: my sourdough loaves at 75% hydration spread flat after I turn them out of the basket.\n"
    "assistant: Given Bubbles has been slow, the bulk fermentation was too short: end bulk when the dough has risen "
    "by half, and bake the loaves in a preheated Dutch oven.",
    "user: We'll be away for ten days. How do I keep Bubbles, my sourdough starter, alive meanwhile?\nassistant: "
    "Feed Bubbles a stiffer feed the evening before you leave, let it ferment for an hour, then keep the starter in "
    "the fridge until you are back.",
    "user: The crust of my sourdough loaves is pale and the score barely opens, though Bubbles is lively again.\n"
    "assistant: Preheat the Dutch oven for 45 minutes and end bulk fermentation earlier: an over-proofed sourdough "
    "loaf bakes pale.",
]
SOURDOUGH_TITLES = ["Sourdough starter Bubbles is sluggish", "", "Away for ten days", "Pale sourdough crust"]
# A project whose conversations are titled like tasks given to an agent.
TIDEPOOL = [
    "user: I'm starting tidepool, a small Rust CLI that prints tide tables from NOAA predictions. Which argument "
    "parser should tidepool use?\nassistant: For tidepool, clap v4 with the derive feature gives typed subcommands "
    "and shell completions.",
    "user: tidepool downloads the whole NOAA station list every time. I want a local cache for tidepool.\n"
    "assistant: Cache the station list in SQLite under the cache directory, and refresh it every thirty days.",
    "user: Today is release day for tidepool 0.3.0, the co-maintainer approved the pull request.\nassistant: The "
    "changelog for tidepool 0.3.0 lists the SQLite cache and metric units; tag the release and push the tag.",
]
TIDEPOOL_TITLES = ["Start tidepool with clap", "Cache NOAA stations for tidepool", "Release tidepool 0.3.0"]
TIDEPOOL_PROJECT = "/Users/sam/src/tidepool"
LISBON = [
    "user: My partner and I are planning nine nights in Lisbon in March with our dog. Which neighbourhood suits a "
    "dog?\nassistant: For a Lisbon trip with a dog, Campo de Ourique has flat streets and the Estrela garden.",
    "user: Turn the notes into a day-by-day plan for the Lisbon trip and add a budget table.\nassistant: The plan "
    "for the Lisbon trip puts Alfama on the first day, Belém on the third and Sintra on the fifth, within the budget.",
]
LISBON_TITLES = ["Lisbon in March with a dog", "Lisbon March itinerary and budget"]
BACKGROUND = SOURDOUGH + TIDEPOOL + LISBON + [
    "user: I run Postgres on a Raspberry Pi and want nightly backups to the NAS.\nassistant: Use pgBackRest.",
]


def _name(embedder: MiniLMEmbedder, texts: list[str], titles: list[str], projects: list[str | None] | None = None) -> str:
    similarity = similarity_to(embedder, unit_mean(embedder.embed(texts)))
    return name_group(texts, BACKGROUND, set(), titles, similarity, projects)


def test_a_title_names_the_topic_not_the_name_of_a_thing_in_it(embedder: MiniLMEmbedder) -> None:
    title = _name(embedder, SOURDOUGH, SOURDOUGH_TITLES)
    assert "bubbles" not in title.casefold(), title
    assert "sourdough" in title.casefold(), title
    assert 1 <= len(title.split()) <= 3


def test_a_project_of_task_titles_is_named_after_the_project(embedder: MiniLMEmbedder) -> None:
    title = _name(embedder, TIDEPOOL, TIDEPOOL_TITLES, [TIDEPOOL_PROJECT] * 3)
    assert title == "Tidepool", title
    # Without the project, still never the imperative "Release Tidepool" of one conversation.
    assert _name(embedder, TIDEPOOL, TIDEPOOL_TITLES).casefold() not in {"release tidepool", "start tidepool"}


def test_a_trip_is_a_noun_phrase_never_a_place_and_a_month_side_by_side(embedder: MiniLMEmbedder) -> None:
    title = _name(embedder, LISBON, LISBON_TITLES)
    assert title.casefold() != "lisbon march" and "lisbon" in title.casefold(), title
    assert title == "Lisbon Trip", title  # "trip" heads the name: a compound YAKE alone does not propose


def test_a_heading_is_never_the_assistants_name(embedder: MiniLMEmbedder) -> None:
    chunk = ("user: Thanks. I'll set it up with Claude Code in my homelab repo this weekend.\nassistant: Good plan. "
             "When you do, keep the configuration in the repository (the systemd units, the fstab line) and note the "
             "stanza name and the Postgres port in the README, for a restore under stress.")
    similarity = similarity_to(embedder, embedder.embed([chunk])[0])
    for sim in (None, similarity):
        heading = section_heading(None, chunk, BACKGROUND + [chunk], "Postgres Backups", "2026-09-03",
                                  "Backing up Postgres on a Raspberry Pi", similarity=sim)
        about = heading.removesuffix(" (2026-09-03)")
        assert about.casefold() not in {"claude code", "claude", "code"}, heading
        assert len(heading) <= 60


def test_headings_say_what_each_section_is_about(embedder: MiniLMEmbedder) -> None:
    chunks = [ChunkRow(id=f"{n:032x}", conversation_id=f"c{n}", label=None, text=text, message_ids=("m1",),
                       source="chatgpt", conversation_title=title or None, date=datetime(2026, 9, 21 + n))
              for n, (text, title) in enumerate(zip(SOURDOUGH, SOURDOUGH_TITLES))]
    article = compose_article(None, "Sourdough", chunks, BACKGROUND, {f"c{n}": f"{n:08x}" for n in range(4)}, 2,
                              embedder)
    headings = [line[3:].rsplit(" (", 1)[0] for line in article.splitlines()
                if line.startswith("## ") and line != "## References"]
    assert len(headings) == 4 and len({h.casefold() for h in headings}) == 4, headings
    for h in headings:
        words = h.split()
        # A name ("Bubbles"), a verb left dangling ("failed") or a number ending a fragment is not a subject.
        assert h.casefold() != "bubbles" and not words[-1].endswith("ed") and words[-1].lower() != "ten", headings
    # The title's own words or a conversation title; never a cut sentence.
    assert all("…" not in h and len(h) <= 47 for h in headings)
    lead = next(line for line in article.splitlines() if line.startswith("**Sourdough**"))
    assert " and " in lead and "Bubbles is" not in lead
    about = lead.split(", about ", 1)[1].rstrip(".").replace(" and ", ", ").split(", ")
    assert len(about) == 3 and not any(a.casefold() in b.casefold() for a in about for b in about if a != b), lead


def test_three_unrelated_topics_of_one_conversation_find_three_buckets(make_ctx: Any, embedder: MiniLMEmbedder) -> None:
    """One conversation (one source, no project) that goes from the starter to the trip to the
    tidepool cache: each of its chunks joins the chunks of its own topic, not one another."""
    from memvault.engines.none import NoneEngine
    from memvault.stages.cluster import run_cluster

    ctx = make_ctx(NoneEngine())
    mixed, *others = ctx.ledger.conversations_to_chunk()[:3]
    rows = [("mixed-sourdough", mixed, SOURDOUGH[0]), ("mixed-lisbon", mixed, LISBON[0]),
            ("mixed-tidepool", mixed, TIDEPOOL[1]),
            ("s2", others[0], SOURDOUGH[1]), ("s3", others[1], SOURDOUGH[3]),
            ("l2", others[0], LISBON[1]), ("t1", others[1], TIDEPOOL[0]), ("t3", others[0], TIDEPOOL[2])]
    vectors = embedder.embed([text for *_, text in rows])
    for (chunk_id, cid, text), vector in zip(rows, vectors):
        ctx.ledger.add_chunk(chunk_id, cid, [chunk_id], text[:40], text, vector.astype(float).tolist(), "r1")
    run_cluster(ctx)
    placed = {chunk_id: bucket for bucket, ids in ctx.ledger.pending_by_bucket().items() for chunk_id in ids}
    topic = {"mixed-sourdough": "bread", "s2": "bread", "s3": "bread", "mixed-lisbon": "trip", "l2": "trip",
             "mixed-tidepool": "cli", "t1": "cli", "t3": "cli"}
    mixed_buckets = [placed[c] for c in ("mixed-sourdough", "mixed-lisbon", "mixed-tidepool") if c in placed]
    assert len(set(mixed_buckets)) == len(mixed_buckets), placed
    for bucket in set(placed.values()):
        assert len({topic[c] for c, b in placed.items() if b == bucket}) == 1, placed
    # Nothing is lost: every chunk is in a bucket or still waiting for one.
    assert set(placed) | {c for c, _ in ctx.ledger.unassigned_chunks()} == set(topic)


def test_stored_chunk_vectors_stand_for_the_chunks_texts(embedder: MiniLMEmbedder) -> None:
    """Given the chunk stage's vectors, synthesis embeds only candidate phrases, never the
    chunks' texts again, and names the sections as it does from freshly embedded texts."""
    chunks = [ChunkRow(id=f"{n:032x}", conversation_id=f"c{n}", label=None, text=text, message_ids=("m1",),
                       source="chatgpt", conversation_title=title or None, date=datetime(2026, 9, 21 + n))
              for n, (text, title) in enumerate(zip(SOURDOUGH, SOURDOUGH_TITLES))]
    shorts = {f"c{n}": f"{n:08x}" for n in range(4)}
    embedded: list[str] = []

    class Recording:
        dim = embedder.dim

        def embed(self, texts: list[str]) -> Any:
            embedded.extend(texts)
            return embedder.embed(texts)

    fresh = compose_article(None, "Sourdough", chunks, BACKGROUND, shorts, 2, Recording())
    assert set(SOURDOUGH) <= set(embedded)
    embedded.clear()
    stored = embedder.embed(list(SOURDOUGH))
    reused = compose_article(None, "Sourdough", chunks, BACKGROUND, shorts, 2, Recording(), chunk_vectors=stored)
    assert not set(SOURDOUGH) & set(embedded) and embedded  # phrases only
    assert reused == fresh
