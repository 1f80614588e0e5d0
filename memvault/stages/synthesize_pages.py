"""synthesize, both paths: the conversation pages citations link to (memvault.markdown.conversation_page).

Before an article citing new chunks is written, each cited conversation's page gains those
chunks' messages (the ledger's text, agent noise left out), so a citation never points at a
page that is not there: a crash between the two writes leaves a page with a passage no
article cites yet, which the next write of the same chunks rewrites to the same text.
"""

from collections import defaultdict

from memvault.markdown.conversation_page import FOLDER, PageMessage, page_stem, render_page
from memvault.hygiene.noise import strip_noise
from stores.rows import ChunkRow
from memvault.stages.context import StageContext
from memvault.stages.synthesize_extractive import date_of


def write_conversation_pages(ctx: StageContext, chunks: list[ChunkRow], shorts: dict[str, str]) -> dict[str, int]:
    """Add ``chunks`` to their conversations' pages; returns chunk id → the sequence number of
    its first shown message (the anchor its citation links to)."""
    anchors: dict[str, int] = {}
    by_conv: dict[str, list[ChunkRow]] = defaultdict(list)
    for c in chunks:
        by_conv[c.conversation_id].append(c)
    for cid, rows in by_conv.items():
        thread = {m.native_id: m for m in ctx.ledger.active_thread(cid)}
        shown: list[list[PageMessage]] = []
        for c in rows:
            messages = [PageMessage(m.seq, m.role, strip_noise(m.text), m.timestamp)
                        for m in (thread.get(n) for n in c.message_ids)
                        if m is not None and not m.low_value and strip_noise(m.text).strip()]
            if messages:
                anchors[c.id] = messages[0].seq
                shown.append(messages)
        if not shown:
            continue
        path = ctx.vault.home / FOLDER / f"{page_stem(shorts[cid])}.md"
        page = render_page(ctx.vault.read(path), rows[0].conversation_title or rows[0].label or "",
                           rows[0].source, date_of(rows[0].date), shown)
        path.parent.mkdir(parents=True, exist_ok=True)
        ctx.vault.write(path, page)
    return anchors
