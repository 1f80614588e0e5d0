"""Whether a prompt deserves recalled memory, and whether a recalled text can be evidence (pure,
standard library only: the hook client imports it before it talks to any server).

Three questions, each answered from text alone or from numbers recall measured:

- ``trivial_reason``: a prompt that carries nothing to look up — "thanks", "ok", "👍",
  "continue", "hi", yes/no, a slash command, a short follow-up — never gets a block, and is
  answered before any index or model is touched.
- ``Signals`` / ``decide``: for a prompt that does carry content, the evidence recall found
  for it — how close the best evidence unit is in meaning, how close the home's closest node
  is, and how much of the prompt's information (IDF mass of its content words in this home;
  a date word held by the unit's date) the unit holds — as one evidence score, unit cosine +
  top cosine + coverage, against a threshold chosen on held-out data
  (bench/prompt_decisions.py). The cosine's margin over the prompt's background (the mean
  cosine of the vector list's tail) and the agreement of the lexical and vector lists are
  measured and explained too; on the tuning data neither separated answerable from unrelated
  prompts beyond the score, so the margin gates only when ``min_margin`` is set.
  ``explain`` says why in words and numbers.
- ``contentless`` / ``structural``: a greeting, an acknowledgement, tool boilerplate, a heading,
  a footnote definition or a reference list is never a hit by itself, whatever its neighbours
  matched.
"""

import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from datetime import datetime  # the hook imports this module; datetime costs it ~1 ms

QUERY_MAX_CHARS = 2_000  # a prompt longer than this is cut before any work (megabyte pastes)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Function words and the words of requests to an assistant: they say how, not what.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each either else
ever every few for from further get gets getting got had hadn has hasn have haven having he her here hers
herself him himself his how however i if in into is isn it its itself just let lets like ll me might mine
more most much must mustn my myself need needs no nor not now of off on once one only or other ought our ours
ourselves out over own per please quite rather re really s same shall shan she should shouldn so some such
t than that thats the their theirs them themselves then there these they this those though through to too
under until up upon us use used using ve very was wasn way we well were weren what whats when where whether
which while who whom whose why will with within without won would wouldn yes yet you your yours yourself
yourselves d m o y ok okay
tell know think want make see look give take go going come thing things something anything everything
stuff lot lots kind sort bit actually maybe perhaps probably sure right thanks thank hi hello hey
""".split())
# Whole prompts that only acknowledge, greet, agree, refuse or tell the agent to go on.
_ACKS = frozenset("""
thanks thank thx ty cheers great good nice cool perfect awesome excellent fine ok okay k kk yes yeah yep yup sure
no nope nah hi hello hey yo continue go proceed done next again retry more lgtm agreed correct right wrong
wow gotcha understood noted indeed alright sounds works worked please stop wait hmm hm ah oh
""".split())
_SLASH = re.compile(r"^/[A-Za-z][\w:.-]*(?:\s|$)")
# Tool boilerplate and frame text that a turn may consist of (no words of its own).
_BOILERPLATE = re.compile(
    r"^\s*(?:\[?(?:request interrupted by user|tool (?:use|result)[^\]]*|image|no content|"
    r"command (?:name|message|args)[^\]]*)\]?|<[^>]{1,80}>\s*)+\s*$", re.I)
_FOOTNOTE_DEF = re.compile(r"^\s*\[\^[^\]]+\]:")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_LINK_OR_CITE = re.compile(r"\[\[[^\]]+\]\]|`?conv:[0-9a-f]{6,}`?|\[[^\]]*\]\([^)]*\)|\[\^[^\]]+\]")


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters and digits, inner apostrophes kept)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


def content_words(text: str) -> list[str]:
    """The words of ``text`` that say what it is about (no function words, no "please"), each
    once, in order; a word with an apostrophe counts by its stem ("melanie's" → "melanie")."""
    out: list[str] = []
    for w in words(text):
        stem = w.split("'", 1)[0]
        if len(stem) < 2 and not stem.isdigit():
            continue
        if stem in STOPWORDS or stem in out:
            continue
        out.append(stem)
    return out


def bounded_query(prompt: str, max_chars: int = QUERY_MAX_CHARS) -> str:
    """The prompt cut to ``max_chars`` (its start: what a person asks comes first), spaces folded."""
    head = prompt[: max_chars * 2] if len(prompt) > max_chars * 2 else prompt
    return " ".join(head.split())[:max_chars]


def trivial_reason(prompt: str, min_words: int = 2) -> str | None:
    """Why ``prompt`` carries nothing to recall for (a sentence), or None when it may."""
    text = prompt.strip()
    if not text:
        return "the prompt is empty"
    if _SLASH.match(text) and "\n" not in text:
        return f"it is a slash command ({text.split()[0]})"
    all_words = words(text)
    if not all_words:
        return "it has no words (only emoji or punctuation)"
    if all(w.split("'", 1)[0] in _ACKS or w in STOPWORDS for w in all_words):
        return "it only acknowledges, greets, agrees or tells the agent to go on"
    found = content_words(text)
    if len(found) < min_words:
        shown = f" ({found[0]!r})" if found else ""
        return f"it has {len(found)} content word{'s' if len(found) != 1 else ''}{shown}, fewer than {min_words}"
    return None


def contentless(text: str, min_words: int = 2) -> bool:
    """A turn with no words of its own to show: a greeting, "ok", tool boilerplate."""
    body = text.strip()
    if ": " in body[:40] and not body.startswith("["):  # "speaker: text" as conversations store turns
        body = body.split(": ", 1)[1]
    return not body or bool(_BOILERPLATE.match(body)) or trivial_reason(body, min_words) is not None


def structural(text: str) -> bool:
    """Text that only frames other text: headings, footnote definitions, a list of links or
    citations (a reference list) — never a hit by itself."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return True
    if all(_HEADING.match(ln) or _FOOTNOTE_DEF.match(ln) for ln in lines):
        return True
    prose = [ln for ln in lines if not (_HEADING.match(ln) or _FOOTNOTE_DEF.match(ln))]
    listed = all(_LIST_ITEM.match(ln) for ln in prose)
    stripped = " ".join(_LINK_OR_CITE.sub(" ", _LIST_ITEM.sub("", ln)) for ln in prose)
    return listed and len(content_words(stripped)) < 3


def idf(df: int, docs: int) -> float:
    """Smoothed inverse document frequency; a word the home never saw gets the most."""
    return math.log((docs + 1) / (df + 0.5))


_MONTHS = {m: n for n, m in enumerate("january february march april may june july august september october "
                                       "november december".split(), start=1)}


def date_words(text: str) -> dict[str, tuple[str, int]]:
    """The words of ``text`` that name a date: a month ("may" only beside a number), a year
    (1900–2099) or a day (a number up to 31 beside a month), each with what it names."""
    toks = words(text)
    out: dict[str, tuple[str, int]] = {}
    for i, t in enumerate(toks):
        near = toks[max(0, i - 1):i] + toks[i + 1:i + 2]
        if t in _MONTHS and (t != "may" or any(x.isdigit() for x in near)):
            out[t] = ("month", _MONTHS[t])
        elif t.isdigit() and len(t) == 4 and 1900 <= int(t) <= 2099:
            out[t] = ("year", int(t))
        elif t.isdigit() and 1 <= int(t) <= 31 and any(x in _MONTHS for x in near):
            out[t] = ("day", int(t))
    return out


def _date_holds(kind: str, value: int, when: "datetime | None") -> bool:
    """A unit's date holds a date word: the same year or month; a day only says "a date" (a
    question asks about "the week before 9 November", so any dated unit holds it)."""
    if when is None:
        return False
    return kind == "day" or (kind == "year" and when.year == value) or (kind == "month" and when.month == value)


def coverage(query_words: Iterable[str], unit_text: str, df: Mapping[str, int], docs: int,
             when: "datetime | None" = None, dates: Mapping[str, tuple[str, int]] | None = None) -> tuple[float, float]:
    """``(covered, mass)``: the IDF mass of the query's content words, and the share of it
    that ``unit_text`` holds (a word counts when the unit holds it or a word it starts). A
    date word of the query (``dates``, from ``date_words``) counts when the unit's date
    ``when`` holds it: a turn's date is not in its text, and "in May 2023" asks for it."""
    have = {w.split("'", 1)[0] for w in words(unit_text)}
    dates = dates or {}
    total = got = 0.0
    for w in query_words:
        weight = idf(df.get(w, 0), docs)
        total += weight
        if w in dates:
            got += weight if _date_holds(*dates[w], when) else 0.0
        elif w in have or (len(w) >= 5 and any(h.startswith(w[:5]) for h in have)):
            got += weight
    return (got / total if total else 0.0), total


# How long the hook waits for a running `memvault serve` to answer (`[live] prompt_timeout_s`;
# also the hook's own fallback when serve.json does not say).
SERVE_TIMEOUT_S = 0.8


class GateParams(NamedTuple):
    """Weights and thresholds of the decision, chosen on the tune split of
    bench/prompt_decisions.py (LoCoMo dev conversations 1–3 and the tune half of the unrelated
    real prompts): a logistic fit of injecting on (unit cosine, top cosine, coverage) weighed
    the three alike (4.9, 5.1, 4.8 over 5 units), so each counts once. ``min_evidence`` is the
    lowest threshold that injects on no unrelated tune prompt (1.235) plus a margin chosen by
    cross-validation inside tune (0.044: the margin that lets no left-out unrelated prompt in,
    since the highest unrelated score seen underestimates how far the next one reaches)."""

    min_words: int = 2
    w_coverage: float = 1.0
    min_evidence: float = 1.279
    min_cos: float = 0.0
    min_margin: float = -1.0
    weigh: int = 5  # the best of this many evidence units decides
    w_top: float = 1.0  # weight of the home's top cosine (any node, exchanges included)


class Signals(NamedTuple):
    """What recall found for a prompt: the measures the decision reads (a named tuple, not a
    dataclass: the hook imports this module, and dataclasses costs it ~10 ms)."""

    words: tuple[str, ...]
    idf_mass: float
    coverage: float
    cos: float
    background: float
    agree: bool
    in_project: bool = False
    top_cos: float = 0.0  # the best cosine of any node of the home outside the prompt's own session
    # Set when the cosines were measured by this bundled model over the evidence units, not
    # read from the index (whose embedder's cosines the thresholds were not chosen on);
    # ``top_cos`` is then the best of the units shown.
    cosines_by: str = ""

    @property
    def margin(self) -> float:
        return self.cos - self.background

    def evidence(self, p: GateParams) -> float:
        """The evidence score: how close the best evidence unit and the home's closest node are
        in meaning, plus the share of the prompt's rare words (and dates) the unit holds."""
        return self.cos + p.w_top * self.top_cos + p.w_coverage * self.coverage


def decide(s: Signals, p: GateParams) -> tuple[bool, list[str]]:
    """Inject or not, and each reason as a sentence with its number and threshold."""
    score = s.evidence(p)
    verdict = "enough" if score >= p.min_evidence else "not enough"
    reasons = [
        f"content words: {len(s.words)} ({', '.join(s.words[:8])}{'…' if len(s.words) > 8 else ''}), "
        f"IDF mass {s.idf_mass:.1f} in this home",
        f"the best of the top {p.weigh} evidence units: cosine {s.cos:.3f}, and it holds {s.coverage:.0%} of that mass "
        "(a date word counts when the unit's date matches)",
        (f"the closest of the evidence units: cosine {s.top_cos:.3f}" if s.cosines_by else
         f"the closest node of the home (any kind, not of this session): cosine {s.top_cos:.3f}"),
        f"evidence = unit cosine {s.cos:.3f} + {p.w_top:g} × top cosine {s.top_cos:.3f} + {p.w_coverage:g} × coverage "
        f"{s.coverage:.3f} = {score:.3f}, threshold {p.min_evidence:.3f}: {verdict}"
        + (f" (and the unit cosine needs ≥ {p.min_cos:.2f})" if p.min_cos > 0 else ""),
        f"cosine {s.margin:+.3f} over the prompt's background {s.background:.3f}"
        + (f" (needs ≥ {p.min_margin:+.3f})" if p.min_margin > -1.0 else " (shown, not required)"),
        "the lexical and vector lists agree on it" if s.agree else "the lexical and vector lists do not agree on it",
    ]
    if s.cosines_by:
        reasons.insert(1, f"cosines measured by the bundled {s.cosines_by} over the recalled units' texts: the "
                          "thresholds were chosen on its cosines, not on those of the index's embedder")
    if s.in_project:
        reasons.append("it comes from the project the prompt is made in (project prior applied)")
    inject = score >= p.min_evidence and s.cos >= p.min_cos and s.margin >= p.min_margin
    return inject, reasons


def explain(injected: bool, reasons: list[str], chars: int = 0) -> str:
    """The decision as lines of plain text (what `prompt-recall --explain` prints)."""
    head = f"injected: yes — {chars} characters" if injected else "injected: no"
    return "\n".join([head, *(f"  - {r}" for r in reasons)])
