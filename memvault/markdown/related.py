"""Links between articles: which articles share enough with one another to say "See also".

No model: each article's prose (title, lead, sections; References and See also aside) becomes
a bag of content words and capitalised names, weighed by inverse document frequency over the
vault. Two articles are related when the cosine of those bags clears `MIN_SCORE` — they share
names (a project, a tool, a person), file or command names, or key terms. Each article lists
its `TOP` best partners, and a partner lists it back, so the graph in Obsidian has edges both
ways. bench/wiki_quality.py reports the share of articles linked.
"""

import math
import re
from collections import Counter

from memvault.markdown.scan import Doc

MIN_SCORE = 0.08
MIN_SHARED = 2
TOP = 3
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]{2,}|[^\W\d_]{2,}")
_COMMON = frozenset("""
the and for that this with you your are was were have has had not but can will would should could
from they them their there here what when where which who how why all any some more most much many
about into than then also just like use used using make made need want know think one two get got
yes okay thanks please sure let well very really only other each such been being does did done
topic came conversation conversations between notes undated about
""".split())
_SKIP_SECTIONS = {"references", "see also"}


def _prose(text: str) -> str:
    doc = Doc(text)
    keep: list[str] = []
    skipping = False
    defs = {i for d in doc.footnote_defs() for i in range(d.start, d.end)}
    heads = {h.start: h for h in doc.headings()}
    for i, line in enumerate(doc.lines):
        if i in heads and heads[i].level <= 2:
            skipping = heads[i].text.rstrip(":").strip().casefold() in _SKIP_SECTIONS
        if not skipping and i not in defs:
            keep.append(re.sub(r"\[\^[^\]]+\]", " ", line))
    return "\n".join(keep)


def _bag(text: str) -> Counter[str]:
    words = [w.strip(".-+").casefold() for w in _TOKEN.findall(_prose(text))]
    return Counter(w for w in words if len(w) > 2 and w not in _COMMON)


def related_articles(texts: dict[str, str], top: int = TOP, min_score: float = MIN_SCORE) -> dict[str, list[str]]:
    """For each article (stem → text), the stems of the articles it should link to, best first."""
    bags = {stem: _bag(t) for stem, t in texts.items()}
    df: Counter[str] = Counter()
    for bag in bags.values():
        df.update(bag.keys())
    n = len(bags)
    vectors: dict[str, dict[str, float]] = {}
    for stem, bag in bags.items():
        # Words of one article only (df 1) link nothing; words everywhere say nothing.
        vec = {w: (1 + math.log(c)) * math.log((n + 1) / df[w]) for w, c in bag.items()
               if 1 < df[w] and (df[w] < n or n <= 2)}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vectors[stem] = {w: v / norm for w, v in vec.items()}
    scores: dict[str, list[tuple[float, str]]] = {s: [] for s in texts}
    stems = sorted(texts)
    for i, a in enumerate(stems):
        va = vectors[a]
        for b in stems[i + 1:]:
            vb = vectors[b]
            small, large = (va, vb) if len(va) < len(vb) else (vb, va)
            shared = [w for w in small if w in large]
            score = sum(small[w] * large[w] for w in shared)
            # One shared word is a coincidence ("lead", "backup"); two or more are a subject.
            if score >= min_score and len(shared) >= MIN_SHARED:
                scores[a].append((score, b))
                scores[b].append((score, a))
    out: dict[str, list[str]] = {s: [] for s in texts}
    for stem, pairs in scores.items():
        for _, other in sorted(pairs, key=lambda t: (-t[0], t[1]))[:top]:
            if other not in out[stem]:
                out[stem].append(other)
            if stem not in out[other]:
                out[other].append(stem)  # both ways: a partner lists it back
    return out


def add_see_also(text: str, names: list[str]) -> str:
    """``text`` with a `- [[name]]` bullet in See also for each of ``names`` it does not link
    yet; the section is created before References when missing."""
    have = {m.casefold() for m in re.findall(r"\[\[([^\]|#]+)", text)}
    new = [f"- [[{name}]]" for name in names if name.casefold() not in have]
    if not new:
        return text
    lines = text.rstrip("\n").split("\n")
    see = next((i for i, ln in enumerate(lines) if re.fullmatch(r"##\s+See also\s*", ln, re.I)), None)
    if see is not None:
        end = next((i for i in range(see + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        while end > see + 1 and not lines[end - 1].strip():
            end -= 1
        lines[end:end] = new
    else:
        refs = next((i for i, ln in enumerate(lines) if re.fullmatch(r"##\s+References\s*", ln, re.I)), len(lines))
        lines[refs:refs] = ["## See also", "", *new, ""]
    return "\n".join(lines) + "\n"
