"""cluster, model path: the reply's shape, the prompt's chunk list, and validation of names.

The model sees chunks as `c1…cK` and answers, per chunk, existing bucket names and/or one
proposed new bucket. Names are matched to Meta/Buckets.md case- and space-insensitively;
an unknown name is rejected (never silently created), and a chunk left with neither a valid
bucket nor a proposal falls back to the centroid path with the reason recorded.
"""

from typing import NamedTuple

from pydantic import BaseModel, Field

from memvault.markdown.names import title_to_stem
from stores.meta import bucket_key
from stores.rows import ChunkRow


# A reply's size: the `{"assignments": [` frame, then per chunk an entry with a bucket
# name or a proposal (name and a one-sentence description): about 80 tokens at most.
_REPLY_OVERHEAD_TOKENS = 16
_ENTRY_TOKENS = 80


def reply_tokens(n_chunks: int, cap: int) -> int:
    """`max_tokens` for a batch of `n_chunks`: one entry each, at most `cap`."""
    return max(1, min(cap, _REPLY_OVERHEAD_TOKENS + _ENTRY_TOKENS * n_chunks))


class NewBucket(BaseModel):
    name: str = Field(min_length=2, max_length=80)
    description: str = Field(min_length=1, max_length=600)


class ClusterItem(BaseModel):
    chunk: str
    buckets: list[str] = Field(default_factory=list)
    new_bucket: NewBucket | None = None


class ClusterReply(BaseModel):
    assignments: list[ClusterItem] = Field(min_length=1)


class Decision(NamedTuple):
    """What the reply says about one chunk: buckets to join, a proposal, or why it falls back."""

    buckets: list[str]
    proposal: tuple[str, str] | None
    fallback: str | None


def clean_name(name: str) -> str:
    """A proposed name as a bucket title: no heading marks, single spaces, a usable file stem."""
    flat = " ".join(name.replace("#", " ").replace("_", " ").split()).strip(" .:-")
    return flat if flat and title_to_stem(flat) else ""


def show_chunks(chunks: list[ChunkRow], limit: int) -> str:
    blocks = []
    for i, c in enumerate(chunks, start=1):
        text = c.text if len(c.text) <= limit else c.text[:limit] + " …"
        title = c.conversation_title or "untitled"
        blocks.append(f"--- chunk c{i} (from “{title}”, topic: {c.label or 'unlabelled'}) ---\n{text}")
    return "\n\n".join(blocks)


def show_buckets(buckets: dict[str, str]) -> str:
    if not buckets:
        return "(none yet: propose new buckets)"
    return "\n".join(f"- {name}: {desc or 'no description'}" for name, desc in buckets.items())


def decide(reply: ClusterReply, n: int, bucket_names: dict[str, str]) -> list[Decision]:
    """One decision per chunk `c1…cn`; `bucket_names` maps `bucket_key(name)` → canonical bucket name."""
    by_chunk: dict[int, ClusterItem] = {}
    for answer in reply.assignments:
        digits = "".join(ch for ch in answer.chunk if ch.isdigit())
        if digits and 1 <= int(digits) <= n and int(digits) - 1 not in by_chunk:
            by_chunk[int(digits) - 1] = answer
    out = []
    for i in range(n):
        item = by_chunk.get(i)
        if item is None:
            out.append(Decision([], None, "the model gave no answer for this chunk"))
            continue
        names, unknown = [], []
        for raw in item.buckets:
            canonical = bucket_names.get(bucket_key(raw))
            if canonical is None:
                unknown.append(raw)
            elif canonical not in names:
                names.append(canonical)
        proposal = None
        if item.new_bucket is not None:
            name = clean_name(item.new_bucket.name)
            if name and bucket_key(name) in bucket_names:
                # "New" but already exists: join it instead of creating a twin.
                if bucket_names[bucket_key(name)] not in names:
                    names.append(bucket_names[bucket_key(name)])
            elif name:
                proposal = (name, " ".join(item.new_bucket.description.split()))
        if names or proposal:
            out.append(Decision(names, proposal, None))
        else:
            why = f"unknown bucket name(s) {', '.join(map(repr, unknown))}" if unknown else "no bucket chosen"
            out.append(Decision([], None, why))
    return out
