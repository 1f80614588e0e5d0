"""What a recall query says beyond its words (pure): the exact tokens it names and the period
of time it names, the two query features recall scoring can use (see ``scoring``).

Exact tokens are what a person types when they mean one thing: a number ("18th", "2023"), an
identifier ("PR-1432", "db_backup.sh") or a name (a capitalised word that is not the first
word of the sentence). Embeddings blur them ("1432" is near "1433"); the turn that contains
the token is usually the one meant.
"""

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]|[A-Za-z0-9]")
_TOKEN = re.compile(r"[a-z0-9]+")
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH = "(" + _MONTH_NAMES + r")\.?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(?:in|of|during|since|by)\s+((?:19|20)\d{2})\b", re.I)
# Words that are capitalised at the start of a question, not names.
_STOP = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how", "did", "does", "do", "is",
         "are", "was", "were", "can", "could", "would", "should", "will", "has", "have", "had", "the", "a",
         "an", "i", "in", "on", "of", "and", "or", "to", "for", "my", "me", "we", "our", "you", "your"}


def words(text: str) -> set[str]:
    """Lowercase alphanumeric tokens, as exact-token matching compares them."""
    return set(_TOKEN.findall(text.lower()))


def exact_tokens(query: str) -> list[str]:
    """The query's exact tokens, lowercase alphanumeric parts, each once.

    A token with a digit, an identifier with inner ``-_./`` or a capitalised word after the
    first word; question words and other function words never count.
    """
    out: list[str] = []
    for i, match in enumerate(_WORD.finditer(query)):
        word = match.group(0)
        inner = any(ch in word for ch in "-_./")
        if any(ch.isdigit() for ch in word) or inner or (i > 0 and word[0].isupper()):
            for part in _TOKEN.findall(word.lower()):
                if part not in _STOP and part not in out and (len(part) > 1 or part.isdigit()):
                    out.append(part)
    return out


@dataclass(frozen=True)
class Period:
    """A span of time a query names: [start, end)."""

    start: datetime
    end: datetime

    def holds(self, t: datetime, slack_days: float) -> bool:
        """``t`` inside the period, or up to ``slack_days`` after it (events are told after they happen)."""
        t = t.replace(tzinfo=None)
        return self.start <= t < self.end + timedelta(days=slack_days)


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + (month == 12), month % 12 + 1, 1)


def named_period(query: str) -> Period | None:
    """The day, month or year a query names ("on 9 November, 2022", "in May 2023", "in 2021"),
    the most precise first; None when it names none."""
    for pattern, day_group, month_group in ((_DAY_MONTH_YEAR, 1, 2), (_MONTH_DAY_YEAR, 2, 1)):
        m = pattern.search(query)
        if m:
            try:
                start = datetime(int(m.group(3)), _MONTHS[m.group(month_group).lower()], int(m.group(day_group)))
            except ValueError:
                continue
            return Period(start, start + timedelta(days=1))
    m = _MONTH_YEAR.search(query)
    if m:
        year, month = int(m.group(2)), _MONTHS[m.group(1).lower()]
        return Period(datetime(year, month, 1), _month_end(year, month))
    m = _YEAR.search(query)
    if m:
        year = int(m.group(1))
        return Period(datetime(year, 1, 1), datetime(year + 1, 1, 1))
    return None


_ASKS_WHEN = re.compile(r"^\s*when\b|\bhow long ago\b|\bwhat (?:year|month|day|date|time)\b|\bwhich (?:year|month|day)\b", re.I)
# Full month names only, and not "may" (a verb far more often than a month).
_CUE_MONTHS = "|".join(name.lower() for name in calendar.month_name if name and name != "May")
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TEMPORAL_CUE = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|recently|ago|(?:last|next|this|past)\s+(?:week|weekend|month|year|"
    rf"night|summer|winter|spring|fall|autumn|morning|{_DAYS})|{_DAYS}|{_CUE_MONTHS}|(?:19|20)\d{{2}})\b",
    re.I,
)


def asks_when(query: str) -> bool:
    """A question about when something happened ("When did …", "how long ago …")."""
    return bool(_ASKS_WHEN.search(query))


# A guess about a person ("Would Ann enjoy …", "What might Bo's job likely be"): its evidence
# is what that person said of themselves, seldom in the question's words. "Could you …" and
# "would I …" are requests or the asker's own doubts, not guesses about someone.
_ASKS_GUESS = re.compile(r"\b(?:would|wouldn't|might|likely|could|probably)\b(?!\s+(?:you|i|we|u)\b)", re.I)


def asks_guess(query: str) -> bool:
    """A question that asks for a guess (would, might, likely, could, probably) about someone it
    names (a capitalised word after the first)."""
    return bool(_ASKS_GUESS.search(query)) and any(t.isalpha() for t in exact_tokens(query))


def has_temporal_cue(text: str) -> bool:
    """The text dates something: "yesterday", "last week", a weekday, a month, a year."""
    return bool(_TEMPORAL_CUE.search(text))


# Function words and chat filler: never evidence that two turns speak of the same thing.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each even ever every few for from further
get got had has have having he her here hers herself him himself his how i if in into is it its itself
just like ll me more most much my myself no nor not now of off oh on once one only or other our ours
out over own really re same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up us ve very was we well were what when where
which while who whom why will with would yeah yes you your yours yourself thanks thank wow great good
going know think lot things thing something make made way sure cool awesome hey hi let see say said
told tell love glad nice time day new what's that's it's i'm you're don't can't
""".split())
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def content_terms(text: str) -> set[str]:
    """Lowercase alphanumeric tokens of three or more characters that are not function words."""
    return {t for t in _TOKEN.findall(text.lower()) if len(t) > 2 and t not in STOPWORDS}


_SPEAKER = re.compile(r"([A-Za-z][\w .'-]{0,40}?):\s")


def speaker(text: str) -> str | None:
    """The speaker a conversation turn's text opens with (``"Melanie: …"`` → ``"melanie"``)."""
    m = _SPEAKER.match(text)
    return m.group(1).strip().lower() if m else None


def content_words(text: str) -> int:
    """How many content terms a text holds past its speaker label (``"Ann: Thanks, Bo!"`` → 1):
    a turn of thanks or surprise says little whatever words it shares with a query."""
    m = _SPEAKER.match(text)
    return len(content_terms(text[m.end():] if m else text))


def hop_terms(seeds: list[str], pool: list[str], query: str, limit: int, max_share: float) -> list[str]:
    """The rare terms the ``seeds`` (the first hop's best texts) add to ``query``: what a second
    hop searches for. A term counts when it is in no more than ``max_share`` of the ``pool``
    (the first hop's texts; at least in one, so one seed's own word always may), is not a word of
    the query or a function word, and not a seed's speaker. Order: in more seeds first, then
    names and numbers, then rarer in the pool; at most ``limit``."""
    asked = words(query)
    pool_terms = [content_terms(t) for t in pool]
    limit_df = max(1.0, max_share * len(pool_terms))
    names = {m.group(0).lower() for t in seeds for m in _NAME.finditer(t)}
    speakers = {s for t in seeds if (s := speaker(t))}
    seen: dict[str, int] = {}
    for text in seeds:
        for term in content_terms(text):
            if term not in asked and term not in speakers:
                seen[term] = seen.get(term, 0) + 1
    ranked = []
    for term, n_seeds in seen.items():
        df = sum(term in ts for ts in pool_terms)
        if df <= limit_df:
            salient = term in names or any(ch.isdigit() for ch in term)
            ranked.append((-n_seeds, not salient, df, term))
    return [term for *_, term in sorted(ranked)[:limit]]
