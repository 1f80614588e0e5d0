"""synthesize: per bucket, chunks not yet in `synthesized_bucket_chunks` → create or update
`articles/<Bucket>.md`, through the gate.

No-model path: extractive synthesis — the most informative sentences of each new chunk
become a section citing its conversation. Existing text (including a person's edits) is
kept as is; new sections are woven in before See also / References.

Crash safety: the intent (bucket, chunks, hash of the new article) is journaled in the
ledger before the file is written; the next run turns an intent whose file matches into
`synthesized_bucket_chunks` rows and drops one whose file was never written, so no chunk is
synthesized twice and none is lost.
"""

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from memvault.failpoints import failpoint
from memvault.ids import short_ids
from memvault.markdown.footnotes import renumber
from memvault.markdown.gate import gate
from memvault.markdown.names import title_to_stem
from tasks.text import keywords, sentences, surface_form, words

_ROLE = re.compile(r"^(user|assistant|tool|system|attachment|summary):\s*", re.I)
_TAIL = re.compile(r"^##\s+(See also|References)\s*$", re.I | re.M)


def _date(value: Any) -> str:
    return value.strftime("%Y-%m-%d") if isinstance(value, datetime) else "undated"


def citation(chunk: dict[str, Any], short: str) -> str:
    title = " ".join((chunk["conversation_title"] or chunk["label"] or "untitled").split())
    return f"`conv:{short}` ({_date(chunk['date'])}, {chunk['source']}) — {title}"


def extract(chunk_text: str, terms: set[str], n: int) -> list[str]:
    """The ``n`` most informative sentences of a chunk, in their original order."""
    candidates = []
    for line in chunk_text.splitlines():
        role = _ROLE.match(line)
        if role and role.group(1).lower() == "tool":
            continue
        body = _ROLE.sub("", line)
        for s in sentences(body):
            if 40 <= len(s) <= 400 and not s.endswith("?") and "```" not in s:
                candidates.append(s)
    scored = []
    for i, s in enumerate(candidates):
        ws = set(words(s))
        score = len(ws & terms) * 2 + sum(ch.isdigit() for ch in s) ** 0.5 + min(len(ws), 12) / 12
        scored.append((score, i, s))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:n]
    return [s.replace("[", "(").replace("]", ")") for _, _, s in sorted(best, key=lambda t: t[1])]


def new_article(title: str, lead_terms: list[str], chunks: list[dict[str, Any]]) -> str:
    dates = sorted(_date(c["date"]) for c in chunks)
    about = ", ".join(lead_terms[:-1]) + (" and " if len(lead_terms) > 1 else "") + lead_terms[-1] if lead_terms else title
    lead = (f"**{title}** is a topic that came up in {len({c['conversation_id'] for c in chunks})} "
            f"conversation(s) between {dates[0]} and {dates[-1]}, about {about}.")
    return f"# {title}\n\n{lead}\n\n## References\n"


def add_sections(text: str, sections: list[tuple[str, str, str]]) -> str:
    """Insert ``(heading, body, footnote_definition)`` sections before See also / References."""
    m = _TAIL.search(text)
    head, tail = (text[: m.start()], text[m.start():]) if m else (text.rstrip("\n") + "\n\n", "## References\n")
    body = head.rstrip("\n") + "\n\n"
    defs = []
    for heading, prose, definition in sections:
        body += f"## {heading}\n\n{prose}\n\n"
        defs.append(definition)
    tail = tail.rstrip("\n") + "\n"
    if not re.search(r"^##\s+References\s*$", tail, re.I | re.M):
        tail += "\n## References\n"
    return body + tail + "\n" + "\n".join(defs) + "\n"


def synthesize_bucket(ctx: Any, bucket: str, chunk_ids: list[str], shorts: dict[str, str]) -> tuple[str, str | None, str]:
    """Build the new article text; returns (path key, previous text, new text)."""
    vault, ledger = ctx.vault, ctx.ledger
    path = vault.article_path(bucket)
    previous = vault.read(path)
    chunks = [ledger.chunk(c) for c in chunk_ids]
    texts = [c["text"] for c in chunks]
    background = texts + [ledger.chunk(c)["text"] for c in ledger.assigned_chunk_ids(200)]
    titles = [c["conversation_title"] or "" for c in chunks]
    terms = set(keywords(texts, background, n=12, titles=titles))
    lead_terms = [surface_form(t, texts) for t in keywords(texts, background, n=3, titles=titles)]
    text = previous or new_article(bucket, lead_terms, chunks)
    sections = []
    for n, c in enumerate(chunks, start=1):
        picked = extract(c["text"], terms, ctx.settings.synthesize.sentences_per_chunk)
        if not picked:
            continue
        label = f"new{c['id'][:8]}{n}"
        heading = " ".join(c["label"].replace("#", "").split()) or "Notes"
        sections.append((f"{heading} ({_date(c['date'])})", " ".join(picked) + f"[^{label}]",
                         f"[^{label}]: {citation(c, shorts[c['conversation_id']])}"))
    if not sections:
        return str(path), previous, previous or ""
    new, _ = renumber(add_sections(text, sections))
    return str(path), previous, new


def resolve_intents(ctx: Any) -> int:
    """Finish the journal of an interrupted run (see the module docstring)."""
    done = 0
    for intent in ctx.ledger.intents():
        path = ctx.vault.article_path(intent["bucket"])
        current = ctx.vault.read(path)
        written = current is not None and hashlib.sha256(current.encode()).hexdigest() == intent["article_hash"]
        ctx.ledger.complete_intent(intent["bucket"], written)
        done += written
    return done


def run_synthesize(ctx: Any, log: Any = None) -> dict[str, Any]:
    resumed = resolve_intents(ctx)
    pending = ctx.ledger.pending_by_bucket()
    shorts = short_ids(ctx.ledger.conversation_ids())
    known = set(shorts)
    created = updated = rejected = 0
    for n, (bucket, chunk_ids) in enumerate(pending.items(), start=1):
        path_key, previous, new = synthesize_bucket(ctx, bucket, chunk_ids, shorts)
        stem = title_to_stem(bucket)
        if new == (previous or ""):
            # Nothing extractable in these chunks: record them as done so they are not retried.
            ctx.ledger.record_intent(bucket, chunk_ids, hashlib.sha256(new.encode()).hexdigest(), ctx.run_id)
            ctx.ledger.complete_intent(bucket, True)
            continue
        reasons = gate(new, previous, known)
        if reasons:
            rejected += 1
            ctx.rejected[stem] = reasons
            for c in chunk_ids:
                ctx.ledger.note_attempt("synthesize", f"{bucket}/{c}", "; ".join(reasons),
                                        ctx.settings.synthesize.max_attempts)
            if log:
                log.warning("rejected %s: %s", stem, "; ".join(reasons))
            continue
        ctx.ledger.record_intent(bucket, chunk_ids, hashlib.sha256(new.encode()).hexdigest(), ctx.run_id)
        ctx.vault.write(Path(path_key), new)
        ctx.ledger.complete_intent(bucket, True)
        failpoint("synthesize", n)
        if previous is None:
            created += 1
            ctx.touched_articles[stem] = "created"
        else:
            updated += 1
            ctx.touched_articles.setdefault(stem, "updated")
        if log:
            log.info("%s %s from %d chunk(s)", "created" if previous is None else "updated", stem, len(chunk_ids))
    return {"buckets": len(pending), "created": created, "updated": updated, "rejected": rejected,
            "resumed": resumed}


@task(name="synthesize", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def synthesize(ctx: Any) -> dict[str, Any]:
    """Prefect task: create or update one article per bucket with new chunks."""
    return run_synthesize(ctx, get_run_logger())
