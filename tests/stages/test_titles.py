"""No-model names: article titles are short noun phrases of the discussion, never a generic
word, a slash command, a file name or an image placeholder; section headings are ≤ 60
characters with the date, never a cut first sentence."""

from datetime import datetime

from memvault.markdown.tree import article_nodes, path_segment
from memvault.naming.headings import section_heading
from memvault.naming.titles import HEADING_CHARS, acceptable, addressed_names, discussion, topic_title
from stores.rows import ChunkRow
from memvault.stages.cluster import name_group
from memvault.stages.synthesize_extractive import compose_article

BACKUPS = [
    "user: /mode color\nassistant: Mode set to color.\nuser: I want nightly pgBackRest backups of Postgres to the "
    "Synology NAS. The pgBackRest stanza should keep 14 days.\nassistant: Use pgBackRest with a weekly full backup "
    "and a retention of 14 days on the Synology NAS.",
    "user: [image: file_0001 (screenshot.png)]\nuser: The pgBackRest backup to the Synology NAS failed last night, "
    "see backup.log and /var/log/pgbackrest.\ntool: create mode 100644 packages/core/index.ts\n"
    "assistant: The NFS mount on the Synology NAS was stale, so pgBackRest could not write the backup.",
    "user: How do I test a restore from the pgBackRest backups on the Synology NAS?\nassistant: Restore the "
    "pgBackRest backup into a scratch cluster and compare row counts.",
]
OTHER = [
    "user: My sourdough starter is sluggish since the weather turned.\nassistant: Keep the starter warm.",
    "user: Plan nine nights in Lisbon with the dog.\nassistant: Alfama suits a dog.",
    "user: tidepool prints NOAA tide tables.\nassistant: Use clap for the Rust CLI.",
]


def _title(texts: list[str], taken: set[str] | None = None, titles: list[str] | None = None) -> str:
    return name_group(texts, texts + OTHER, taken or set(), titles or [""] * len(texts))


def test_a_title_is_a_phrase_of_the_discussion() -> None:
    title = _title(BACKUPS)
    words = title.split()
    assert 1 <= len(words) <= 4 and len(title) <= HEADING_CHARS
    assert title.casefold() in " ".join(BACKUPS).casefold()  # found in the chunks, as they spell it
    assert all(w not in title.casefold() for w in ("topic", "mode", "color", "image", "screenshot", "/", ".log",
                                                     "packages", "create"))
    assert "pgBackRest" in title or "NAS" in title


def test_noise_never_names_a_topic() -> None:
    noise = ["user: /mode color\nassistant: Mode set to color.", "user: [image: file_0042 (photo.png)]\nuser: /compact",
             "user: notes.md\ntool: create mode 100644 packages/app/index.ts\n 3 files changed"]
    title = _title(noise, titles=["/mode color", "", ""])
    assert title.casefold() not in {"topic", "mode color", "mode", "color", "notes", "photo", "packages"}
    assert not any(ch in title for ch in "/[]._")
    assert discussion(noise[1]).strip() == ""


CLAUSES = [
    "user: Honestly my pets bring me so much joy lately. When the pets bring their toys over I laugh.\n"
    "assistant: Pets bring comfort and routine; the dog and the two cats sound lovely.",
    "user: The car broke down again on the highway, and the car broke my budget last month too.\n"
    "assistant: A mechanic can check the alternator of the car before the trip.",
    "user: I feel so motivated after the seminars went well! So motivated to keep going.\n"
    "assistant: Motivated people keep going; the seminars went well because you prepared.",
]


def test_a_name_is_never_a_piece_of_a_sentence() -> None:
    # Names seen on LoCoMo's conversations: a subject and its verb, an adjective, a verb alone,
    # a clause with a pronoun or "is" inside, an interjection first.
    for clause in ["Pets bring", "car broke", "Seminars went", "Motivated", "Cute", "Recent", "Follow",
                   "Students succeed", "Event next", "Made this bowl", "Plate is awesome", "Buddies This Weekend",
                   "Yeah Maria", "Glad Max", "Kids don", "Exciting",
                   # A verb and its object, capitalised at a sentence's start or not.
                   "Watch the movie", "make a difference", "Make a difference", "Joined a gym", "Implement a timing"]:
        assert not acceptable(clause), clause
    for name in ["Lisbon Trip", "Synology NAS", "pgBackRest backups", "Harry Potter", "Prince Harry", "Camping", "Dutch Oven Baking",
                 "stained glass", "State of Education", "Tidepool", "Stress relief", "Learning the piano",
                 "Taking a break", "Make a Difference Day", "Lord of the Rings"]:
        assert acceptable(name), name
    # A person's name alone is who took part: the ways LoCoMo's friends address each other.
    assert addressed_names(["Hey Andrew, how are you?", "user: Wow, Caroline, your group sounds great",
                            "Thanks, Mel! That was fun", "user: Jon, I finally did it", "Sure, I can help",
                            "user: Python, Rust and Go", "I went to Rome, Paris and Berlin"]) == \
        {"andrew", "caroline", "mel", "jon"}
    for text in CLAUSES:
        heading = section_heading(None, text, CLAUSES + OTHER, "Life", "2023-01-01").removesuffix(" (2023-01-01)")
        title = topic_title([text], CLAUSES + OTHER, set(), [""])
        for name in (heading, title):
            assert name.casefold() not in {"pets bring", "car broke", "seminars went", "motivated", "notes"}, name
            assert acceptable(name), name


def test_a_taken_name_gives_the_next_phrase_before_a_number() -> None:
    first = _title(BACKUPS)
    second = _title(BACKUPS, taken={first.casefold()})
    assert second.casefold() != first.casefold() and not second.endswith(" 2")


def test_headings_say_what_the_section_is_about_within_60_characters() -> None:
    long_label = ("I want proper backups for the Postgres 16 instance on my Raspberry Pi 5 (hostname pantry) and "
                  "a retention of fourteen days…")
    for text in BACKUPS:
        heading = section_heading(long_label, text, BACKUPS + OTHER, "Synology NAS", "2026-09-08")
        assert len(heading) <= HEADING_CHARS and heading.endswith(" (2026-09-08)")
        assert "…" not in heading and not heading.startswith("I want")
    # A model's short topic label is kept; a fitting conversation title is used.
    assert section_heading("Restore drills", BACKUPS[2], BACKUPS, "Synology NAS", "2026-10-05") == \
        "Restore drills (2026-10-05)"
    assert section_heading(None, BACKUPS[2], BACKUPS, "X", "2026-10-05", "Restore test of pgBackRest backups") == \
        "Restore test of pgBackRest backups (2026-10-05)"


def test_the_article_has_a_title_phrase_and_short_dated_headings() -> None:
    chunks = [ChunkRow(id=f"{n:032x}", conversation_id=f"c{n}", label=text.split("\n")[0][:79] + "…", text=text,
                       message_ids=("m1",), source="claude-code", conversation_title=None,
                       date=datetime(2026, 9, 8 + n)) for n, text in enumerate(BACKUPS)]
    title = _title(BACKUPS)
    article = compose_article(None, title, chunks, BACKUPS + OTHER, {f"c{n}": f"{n:08x}" for n in range(3)}, 2)
    headings = [line[3:] for line in article.splitlines() if line.startswith("## ") and line != "## References"]
    assert len(headings) == 3 and len(set(headings)) == 3
    for n, h in enumerate(headings):
        assert len(h) <= HEADING_CHARS and h.endswith(f"(2026-09-{8 + n:02d})") and "…" not in h
    # Node paths carry whole headings, dates included (never `…_(20`).
    sections = [n.path.rsplit("/", 1)[-1] for n in article_nodes("Synology_NAS", article) if n.path.count("/") == 2 and "#" not in n.path]
    assert sorted(s for s in sections if s != "References") == sorted(path_segment(h) for h in headings)
    assert all(s.endswith(")") for s in sections if s != "References")
