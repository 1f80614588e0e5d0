"""Names a person would choose: article titles and section headings from key phrases.

With no model, a topic's name comes from its chunks. YAKE (a statistical key-phrase extractor
that works on one document at a time) proposes short noun phrases from the discussion; each is
then weighed by how many of the topic's chunks use its words, how distinctive those words are
against other topics (inverse document frequency over a background), and whether the
conversations' own titles use them. What is not discussion never names anything: tool output,
code, git and build output, slash commands (`/mode`), file names and paths, ids, and image or
attachment placeholders (`[image: file_…]`) are cut before phrases are proposed, and phrases
made only of generic words ("Topic", "Notes", "Question") are refused.

Section headings (memvault.naming.headings) are one phrase of their own chunk (≤ 60 characters with
the date beside it), never a first sentence cut with "…". With an embedder at hand, phrases are
also weighed by their cosine to the text they name (memvault.naming.phrase_similarity).
"""

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from memvault.naming.phrase_similarity import SIM_POWER, Similarity

HEADING_CHARS = 60
_DATE_CHARS = len(" (YYYY-MM-DD)")
PHRASE_CHARS = HEADING_CHARS - _DATE_CHARS
_MAX_TEXT = 20_000  # characters given to YAKE per call: enough for a topic, bounded in time

_ROLE = re.compile(r"^(user|assistant|tool|system|attachment|summary|image):\s*", re.I)
_SKIP_ROLES = {"tool", "system", "attachment", "image"}
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# Lines that are program output, not discussion: git, diffs, build and test logs, prompts.
_OUTPUT_LINE = re.compile(
    r"^\s*(?:(?:create|delete) mode \d+|\d+ files? changed|diff --git|index [0-9a-f]{6,}|@@ |[+-]{3} |"
    r"[$%>#] |\[[\w .:-]*\] |(?:npm|yarn|pnpm) (?:WARN|ERR)|(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FAILED|PASSED)\b|"
    r"Traceback \(most recent|\s*at [\w.$]+\(|\w+@[\w.-]+:)")
_SLASH_COMMAND_LINE = re.compile(r"^\s*/[A-Za-z][\w-]*(?:\s+\S+){0,3}\s*$")
_CUT = re.compile(
    r"`[^`\n]*`"                                            # inline code
    r"|\[(?:image|attachment|document|file)[^\]\n]*\]"      # placeholders: [image], [image: file_…]
    r"|\[Image #\d+\]|<(?:image|attachment)[^>\n]*>"
    r"|\b\w+://\S+|\bwww\.\S+"                               # URLs
    r"|(?<![\w/])/[A-Za-z][\w-]*\b(?!/)"                      # slash commands: /mode, /compact
    r"|\S*[/\\]\S*"                                          # paths
    r"|\b[\w-]+\.(?:[A-Za-z][A-Za-z0-9]{0,4})\b(?=\W|$)"        # file names: notes.md, app.py
    r"|\b[0-9a-f]{7,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b"          # hashes, uuids
    r"|\S*\d\S*[:=_]\S*",                                     # times, ports, key=value
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'+-]*")
_UNICODE_WORD = re.compile(r"[^\W\d_][\w'+-]*")
_SMALL = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "vs", "versus", "with",
          "up", "out", "off", "down"}
# Words that never name a topic on their own.
GENERIC = frozenset("""
topic topics thing things stuff question questions issue issues problem problems help idea ideas note notes
mode modes conversation conversations chat chats session sessions message messages today tomorrow yesterday
time times way ways lot bit image images attachment attachments document documents file files folder command
commands output input result results error errors answer answers reply example examples option options
something anything everything nothing someone part parts kind sort case cases point points step steps
test tests update updates change changes fix fixes work working look looks list lists plan plans
job jobs task tasks stuff setup
user assistant tool system sam yes okay thanks please sure
""".split())
# The assistants and their apps: where a conversation took place, never what it was about.
SOURCE_NAMES = frozenset({"claude", "claude code", "claude ai", "chatgpt", "codex", "codex cli", "openai",
                          "anthropic", "gpt", "copilot", "gemini", "pi agent", "coding agent"})
# Greetings, acknowledgements and sign-offs: what people say around a topic, never its name
# ("Ttyl", "Hey Andrew", "Sounds Great" were article titles once).
FILLER = frozenset("""
hi hey hello hiya heya yo howdy greetings morning afternoon evening night bye goodbye ttyl ttys cya brb gtg
later soon thanks thank thx ty cheers great awesome cool nice sounds sound good okay ok sure yes yeah yep yup
no nope nah lol haha hehe wow congrats congratulations welcome sorry glad happy love totally absolutely
definitely exactly indeed right well oh ah hmm same fun amazing wonderful fantastic talk catch care chat
luck best wishes bless dear hugs xoxo appreciate appreciated anytime np welcome see wait hold yay omg
""".split())
_FILLER_GLUE = frozenset("a an the so much you it that this too me us all for again lot very guys everyone to of "
                         "i am we are is was be really just".split())
# A greeting or an interjection first ("Yeah Maria", "Glad Max", "Sounds yummy") opens a reply, not a name.
_GREETING_START = frozenset("""
hi hey hello hiya heya yo howdy dear thanks thank thx cheers bye goodbye morning
yeah yep yup yes nope nah oh ah hmm wow lol haha hehe ok okay sure sounds glad yay omg woohoo whoa aww ooh
""".split())
_MONTHS = frozenset("january february march april may june july august september october november december "
                    "monday tuesday wednesday thursday friday saturday sunday".split())
_NUMBERS = frozenset("one two three four five six seven eight nine ten eleven twelve twenty hundred".split())
_STOP = GENERIC | _SMALL | set("""
i me my we our you your he she it its they them this that these those is are was were be been being have has
had do does did will would should could can may might must shall not no but if then than so just also very
really about what when where which who why how all any some each every other more most much many few there
here let lets let's i'm i've we're you're don't doesn't didn't isn't it's that's what's itself
don doesn didn isn wasn aren weren haven hasn hadn couldn wouldn shouldn won ain
less least enough again too else both either neither only
without within after before during until through under between against across behind beyond except per via like
""".split())


def _discussion_lines(text: str) -> list[str]:
    """The lines of ``text`` that are people or assistants talking, role prefixes removed."""
    out: list[str] = []
    role, fenced = "", False
    for line in text.splitlines():
        opened = _ROLE.match(line)
        if opened:
            role = opened.group(1).lower()
            line = line[opened.end():]
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or role in _SKIP_ROLES or _OUTPUT_LINE.match(line) or _SLASH_COMMAND_LINE.match(line):
            continue
        out.append(line)
    return out


def discussion(text: str) -> str:
    """``text`` with everything that is not discussion cut out (see the module docstring)."""
    lines = [_CUT.sub(" , ", line) for line in _discussion_lines(text)]
    # A line of a few words is an acknowledgement ("Mode set to color."), not discussion.
    return "\n".join(line for line in lines if len(_WORD.findall(line)) >= 5)


def _tokens(phrase: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(phrase)]


def acceptable(phrase: str) -> bool:
    """Whether ``phrase`` could name a topic: words only, not generic, within the heading budget."""
    if not phrase or len(phrase) > PHRASE_CHARS or any(ch in phrase for ch in "/\\[]<>`:_=@#|"):
        return False
    parts = phrase.split()
    if not 1 <= len(parts) <= 4 or any(_WORD.fullmatch(p) is None for p in parts):
        return False
    toks = [p.lower() for p in parts]
    if toks[0] in _STOP or toks[-1] in _STOP:
        return False
    content = [t for t in toks if t not in _STOP]
    if is_source_name(phrase) or is_filler(phrase):
        return False
    if len(toks) > 1 and toks[-1] in _MONTHS and toks[-2] not in _SMALL:
        return False  # "Lisbon March": a place and a date side by side, not a name ("Lisbon in March" is)
    if _CLAUSE_WORDS & set(toks) or not names_a_thing(parts):
        return False
    # One meaningful word of two letters ("Pi") is a fragment, not a name.
    return bool(content) and not (len(content) == 1 and len(content[0]) < 3)


# A pronoun, a demonstrative or a form of "be" inside a phrase makes it a piece of a sentence
# ("Plate is awesome", "Made this bowl", "Buddies This Weekend"), not a name.
_CLAUSE_WORDS = frozenset("this that these those my your our his her their its is are was were be been am "
                          "i you he she we they me him them us".split())


def names_a_thing(words: Sequence[str]) -> bool:
    """Whether ``words`` (as the text spells them) have the shape of a name: the last can be a
    noun and the first is not a verb alone. English words are read in a lexicon of their parts
    of speech (lemminflect's); a word it does not know — a name, a product, another language —
    passes, and so do capitalised words ("Harry Potter", "Prince Harry"). "Pets bring", "Car broke",
    "Motivated", "Cute", "Students succeed" and "made bowls" name nothing; "Camping", "Dutch
    oven baking" (a gerund names an activity) and "stained glass" do."""
    if not words:
        return False
    last, first = words[-1].lower(), words[0]
    if not _can_be_noun(last) and (len(words) == 1 or not words[-1][:1].isupper()):
        return False  # a capital after the first word is a name's ("Prince Harry")
    lead = first.lower()
    if len(words) >= 3 and words[1].lower() in _ARTICLES and not _gerund(lead):
        # A word before an article is a verb and its object ("Watch the movie", "make a
        # difference", "Joined a gym"), whatever its capital at a sentence's start, unless
        # every word is a name's ("Make a Difference Day"); an activity is a gerund's
        # ("Learning the piano").
        return all(w[:1].isupper() for w in words if w.lower() not in _SMALL)
    # A participle describes ("stained glass", "guided meditation"); a bare verb commands or
    # tells ("made bowls", "won the final").
    return len(words) == 1 or first[:1].isupper() or _readings(lead) != {"VERB"} or _gerund(lead) or lead.endswith("ed")


_ARTICLES = frozenset(("a", "an", "the"))


def _can_be_noun(word: str) -> bool:
    readings = _readings(word)
    return not readings or "NOUN" in readings or _gerund(word)


def _gerund(word: str) -> bool:
    """"baking" (of bake), not "bring" nor "exciting": an -ing form of a verb the lexicon knows,
    and not an adjective."""
    return word.endswith("ing") and word not in _verb_lemmas(word) and "ADJ" not in _readings(word)


@functools.lru_cache(maxsize=8192)
def _lexicon(word: str) -> dict[str, tuple[str, ...]]:
    """The parts of speech an English ``word`` can take, each with its lemmas (empty when the
    lexicon does not know the word)."""
    import lemminflect  # its tables load on the first name asked for (a nightly stage, never the read path)

    return dict(lemminflect.getAllLemmas(word))


def _readings(word: str) -> set[str]:
    return set(_lexicon(word))


def _verb_lemmas(word: str) -> tuple[str, ...]:
    return _lexicon(word).get("VERB", ())


def is_filler(phrase: str) -> bool:
    """Whether ``phrase`` is a greeting, acknowledgement or sign-off ("Ttyl", "Hey Andrew",
    "Sounds Great", "Thanks so much"): every word filler or generic, or a greeting first."""
    toks = [t.strip("'") for t in _tokens(phrase)]
    if not toks:
        return True
    return toks[0] in _GREETING_START or all(t in FILLER or t in _FILLER_GLUE for t in toks)


def addressed_names(texts: Iterable[str]) -> set[str]:
    """Names people are addressed by in ``texts`` ("Hey Andrew", "Thanks, Mel!", "Wow, Caroline,",
    "Caroline: …"), casefolded: a person's name alone names no topic."""
    out: set[str] = set()
    for text in texts:
        for m in _ADDRESS.finditer(text):
            name = next(g for g in m.groups() if g)
            if name.casefold() not in _NOT_NAMES:
                out.add(name.casefold())
    return out


# A greeting before a capitalised word ("Hey Andrew", "Thanks, Mel"); an interjection and a comma
# ("Wow, Caroline,"); a capitalised word opening a line and set off ("Caroline: …", "Mel, …").
_ADDRESS = re.compile(r"\b(?i:hi|hey|hello|thanks|thank you|bye|dear|congrats|congratulations|love you|see you|miss you)"
                      r",?\s+([A-Z][a-z]{2,})\b"
                      r"|\b(?i:wow|oh|yeah|yes|ok|okay|great|awesome|cool|nice|woohoo|whoa|aww|omg|haha|lol|sorry),\s+"
                      r"([A-Z][a-z]{2,})[,.!?]"
                      r"|^(?:\w+:\s*)?([A-Z][a-z]{2,})(?:[!:]\s|,\s+(?=[a-z]|I\b))", re.M)  # not "Python, Rust and Go"
# Words that open a line set off by a comma and are no one's name ("Wow, …", "Sure, …").
_NOT_NAMES = FILLER | _GREETING_START | _STOP | _FILLER_GLUE | frozenset("user assistant system tool".split())


def is_source_name(phrase: str) -> bool:
    """Whether ``phrase`` names an assistant or its app ("Claude Code", "ChatGPT"): the place a
    conversation happened, which names no topic and no section."""
    return " ".join(_tokens(phrase)) in SOURCE_NAMES


def _document_frequency(docs: Iterable[str]) -> tuple[Counter[str], int]:
    df: Counter[str] = Counter()
    n = 0
    for d in docs:
        df.update(set(_tokens(d)))
        n += 1
    return df, n


@functools.lru_cache(maxsize=4)
def _background_frequency(background: tuple[str, ...]) -> tuple[Counter[str], int]:
    """Document frequencies of the discussion in ``background``. One synthesize pass names
    every topic and section against the same background: computed once, not per name
    (it was a tenth of a no-model run). Callers must not change the Counter."""
    return _document_frequency(discussion(b) for b in background)


def _candidates(text: str, top: int) -> list[str]:
    """YAKE's phrases for ``text``, best first, those that could name a topic."""
    if not text.strip():
        return []
    import yake  # networkx and friends load only when a name is needed (never on the read path)

    extractor = yake.KeywordExtractor(lan="en", n=3, dedup_lim=0.8, top=top)
    seen: set[str] = set()
    out = []
    for phrase, _score in extractor.extract_keywords(text[:_MAX_TEXT]):
        phrase = " ".join(phrase.split())
        if not acceptable(phrase):
            phrase = _object_of(phrase)  # "Play the violin" names the violin
        if acceptable(phrase) and phrase.casefold() not in seen:
            seen.add(phrase.casefold())
            out.append(phrase)
    return out


def _object_of(phrase: str) -> str:
    """What a verb and its object ("joined a gym") are about — the words after the article —
    or ``""`` when ``phrase`` is no such pair."""
    parts = phrase.split()
    return " ".join(parts[2:]) if len(parts) >= 3 and parts[1].lower() in _ARTICLES else ""


def _has_phrase(phrase: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) is not None


def ranked_phrases(texts: list[str], background: list[str], titles: list[str] | None = None,
                   top: int = 40, similarity: Similarity | None = None, projects: Sequence[str] = ()) -> list[str]:
    """Key phrases of ``texts`` (one topic's chunks), most fitting first, as the texts spell them.

    ``background`` are documents of other topics too (it may include ``texts``): a phrase
    whose words are everywhere names nothing in particular. A phrase the conversations'
    ``titles`` use is what people call the topic, so titles propose phrases too and a phrase
    found in them weighs more. Phrases of two or three words beat a single word of the same
    weight: "Dutch Oven Baking" says more than "Oven". ``projects`` are the names of the
    folders most of the chunks were written in (a coding agent's project): where the text
    uses one, it is what the person calls the thing they work on, and it weighs double.
    """
    docs = [discussion(t) for t in texts]
    # Punctuation stays: "tidepool: cache NOAA station data" must not yield "tidepool cache NOAA".
    named = [" ".join(_CUT.sub(" , ", t).split()) for t in titles or [] if t and not _SLASH_COMMAND_LINE.match(t)]
    cands = _phrase_candidates(docs, named, projects, top)
    if not cands:
        return []
    lowered = [d.casefold() for d in docs]
    project_keys = {p.casefold() for p in projects}
    doc_words = [set(_tokens(d)) for d in docs]
    bg_df, bg_n = _background_frequency(tuple(background))
    title_words = [set(_tokens(t)) for t in named]
    low_titles = [t.casefold() for t in named]
    coverage: dict[str, float] = {}  # share of chunks or titles that use the phrase as such

    def score_all(entries: dict[str, tuple[int, str]]) -> list[tuple[float, int, str]]:
        out = []
        for key, (rank, phrase) in entries.items():
            content = [t for t in _tokens(phrase) if t not in _STOP]
            as_phrase = sum(_has_phrase(key, d) for d in lowered) / max(len(docs), 1)
            as_words = sum(all(w in ws for w in content) for ws in doc_words) / max(len(docs), 1)
            idf = sum(math.log((1 + bg_n) / (1 + bg_df[w])) + 0.1 for w in content) / len(content)
            in_titles = sum(_has_phrase(key, t) for t in low_titles) / max(len(named), 1)
            words_in_titles = sum(any(w in ts for w in content) for ts in title_words) / max(len(named), 1)
            score = ((0.2 + 0.6 * as_phrase + 0.4 * as_words) * idf * (1 + 1.5 * in_titles + 0.5 * words_in_titles)
                     * _form(phrase) * (2.0 if key in project_keys else 1.0) / (1 + rank / 20))
            last = phrase.split()[-1]
            # A name ends in a noun ("Lisbon trip") or a name ("Synology NAS"); "starter survives
            # ten" or "pantry failed" is a piece of a sentence.
            if len(phrase.split()) > 1 and last.islower() and (last in _NUMBERS or not _used_as_noun(last, docs + named)):
                score *= 0.3
            out.append((score, rank, _spelling(phrase, docs + named)))
            coverage[out[-1][2]] = max(as_phrase, in_titles, 0.8 * as_words)
        return out

    scored = score_all(cands)
    # The best single words, with the common nouns that follow them, are candidates too.
    singles = {p.casefold(): (rank, p) for _, rank, p in sorted(scored, key=lambda t: -t[0]) if len(p.split()) == 1}
    heads = {k: v for k, v in _head_nouns(dict(list(singles.items())[:5]), docs + named).items() if k not in cands}
    scored += score_all(heads)
    if similarity is not None:
        sims = similarity([p for _, _, p in scored])
        scored = [(score * max(float(sim), 0.05) ** SIM_POWER, rank, p) for (score, rank, p), sim in zip(scored, sims)]
    ranked = sorted(scored, key=lambda t: (-t[0], t[1]))
    _name_before_its_head(ranked, coverage)
    # A person's name alone ("Andrew", "Caroline") is who took part, not what it was about.
    names = addressed_names(texts)
    return [p for _, _, p in ranked if not names or not {t for t in _tokens(p) if t not in _STOP} <= names]


def _phrase_candidates(docs: list[str], named: list[str], projects: Sequence[str],
                       top: int) -> dict[str, tuple[int, str]]:
    """Candidate phrases by folded spelling → (rank, spelling): the texts' own, then the
    titles' and the project names the texts use, where the texts did not propose them."""
    cands = {p.casefold(): (rank, p) for rank, p in enumerate(_candidates("\n\n".join(d for d in docs if d), top))}
    for rank, p in enumerate(_candidates(" . ".join(named), 15)):
        cands.setdefault(p.casefold(), (rank, p))
    for name in projects:
        if acceptable(name) and any(_has_phrase(name.casefold(), d.casefold()) for d in docs):
            cands.setdefault(name.casefold(), (0, name))
    return cands


def _name_before_its_head(ranked: list[tuple[float, int, str]], coverage: dict[str, float]) -> None:
    """A lone word is usually the head of a better name among the next phrases ("NAS" →
    "Synology NAS", "March" → "Lisbon March"): the best such phrase scoring at least half
    as well goes first, if the topic uses it widely (not "Release tidepool" of one title)."""
    if ranked and len(ranked[0][2].split()) == 1:
        head = ranked[0][2].casefold()
        for item in ranked[1:8]:
            if item[0] >= 0.5 * ranked[0][0] and head in item[2].casefold().split() and coverage[item[2]] >= 0.5:
                ranked.remove(item)
                ranked.insert(0, item)
                break


def _form(phrase: str) -> float:
    """How much the shape of ``phrase`` suits a name: two or three words beat one; an event
    ("weather turned"), a quantity ("ten days") or an action ("spreading flat") does not name
    a subject."""
    words = phrase.split()
    low = [w.lower() for w in words]
    factor = {1: 1.0, 2: 1.9, 3: 1.7}.get(len(words), 1.0)
    factor *= 0.5 if any(w.islower() and w.endswith("ed") for w in (words[0], words[-1])) else 1.0
    factor *= 0.5 if low[0] in _NUMBERS else 1.0
    factor *= 0.5 if len(words) > 1 and low[0].endswith("ing") and len(low[0]) > 5 else 1.0
    # "starter Bubbles", "dog Pixel", "feed Bubbles": a thing and its name, or an action on it;
    # the topic is the thing ("sourdough starter"), not this one instance of it.
    factor *= 0.5 if len(words) > 1 and words[-1][:1].isupper() and words[-2].islower() else 1.0
    return factor


def _head_nouns(cands: dict[str, tuple[int, str]], texts: list[str], words: int = 3) -> dict[str, tuple[int, str]]:
    """Two-word names built on the best single-word candidates: the word and the common noun
    that follows it in the text ("Lisbon" → "Lisbon trip", "pgBackRest" → "pgBackRest backup").

    YAKE keeps one phrase per cluster of overlapping ones, so such compounds are often missing;
    a name with its head noun says what about the thing the topic is."""
    singles = sorted((rank, p) for key, (rank, p) in cands.items() if len(p.split()) == 1)[:words]
    out: dict[str, tuple[int, str]] = {}
    for rank, word in singles:
        pattern = re.compile(r"(?<![\w-])(" + re.escape(word) + r")\s+([a-z][a-z-]{2,})\b", re.IGNORECASE)
        for text in texts:
            for m in pattern.finditer(text):
                head = m.group(2)
                if not head.islower() or head in _STOP or head.endswith(("ed", "ly")) or head in _MONTHS \
                        or not _used_as_noun(head, texts):
                    continue
                phrase = f"{m.group(1)} {head}"
                if acceptable(phrase):
                    out.setdefault(phrase.casefold(), (rank + 1, phrase))
    return out


_DETERMINER = r"(?:the|a|an|my|our|your|this|that|its|their|his|her|no|each|every|one)"


def _used_as_noun(word: str, texts: list[str]) -> bool:
    """Whether ``word`` follows a determiner somewhere ("the trip", "a full backup"): a cheap
    test that it is a noun, so "tidepool uses" or "starter survives" name nothing."""
    if word.endswith("ed") and not word.endswith("eed"):
        return False  # "the backup failed": a verb after its subject
    pattern = re.compile(rf"\b{_DETERMINER}\s+(?:[\w-]+\s+)?{re.escape(word)}\b", re.IGNORECASE)
    return any(pattern.search(t) for t in texts)


def _spelling(phrase: str, texts: list[str]) -> str:
    """The most common spelling of ``phrase`` in ``texts`` (`pgBackRest`, not `PGBACKREST`)."""
    pattern = re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)
    forms: Counter[str] = Counter(m.group() for t in texts for m in pattern.finditer(t))
    if not forms:
        return phrase
    # A capital that only opens a sentence ("Sourdough starter is…") is no part of the name.
    for form in list(forms):
        lowered = form[:1].lower() + form[1:]
        if lowered != form and lowered in forms:
            forms[lowered] += forms.pop(form)
    # A spelling with capitals is a name (`pgBackRest`); all-lowercase is how commands write it.
    named = [f for f, _ in forms.most_common() if any(c.isupper() for c in f) and not f.isupper()]
    return named[0] if named else forms.most_common(1)[0][0]


def distinct_phrases(phrases: list[str], n: int, exclude: str = "") -> list[str]:
    """The first ``n`` of ``phrases`` that add words: none whose words (plural or not) are all in
    ``exclude`` or in a phrase already picked ("backups" after "full backup")."""
    def stems(text: str) -> set[str]:
        return {w.rstrip("s") for w in _tokens(text) if w not in _STOP}

    seen = stems(exclude)
    out: list[str] = []
    for phrase in phrases:
        words = stems(phrase)
        if {"and", "or"} & set(_tokens(phrase)):
            continue  # "itinerary and budget" is a list already: it reads badly inside another
        if any(_has_phrase(p.casefold(), phrase.casefold()) for p in out):
            continue  # "sourdough starter Bubbles" after "sourdough starter" says it twice
        if words and not words <= seen:
            out.append(phrase)
            seen |= words
        if len(out) == n:
            break
    return out


def title_case(phrase: str) -> str:
    """``phrase`` in title case, leaving words that already carry capitals (`pgBackRest`, `NAS`) alone."""
    out = []
    for i, word in enumerate(phrase.split()):
        if any(c.isupper() for c in word) or (i and word.lower() in _SMALL):
            out.append(word)
        else:
            out.append(word[:1].upper() + word[1:])
    return " ".join(out)


def _title_from_conversations(titles: list[str]) -> str | None:
    """The most common conversation title that could serve as a topic name, if any."""
    for title, _ in Counter(" ".join(t.split()) for t in titles if t).most_common():
        if _SLASH_COMMAND_LINE.match(title):
            continue
        words = _WORD.findall(_CUT.sub(" ", title))
        name = " ".join(words)
        if name and len(name) <= PHRASE_CHARS and any(w.lower() not in _STOP for w in words) and not is_filler(name):
            return name
        if not words and title.isascii() is False:
            # A title in another script ("数据库备份"): its words as written, markup aside.
            name = " ".join(_UNICODE_WORD.findall(_CUT.sub(" ", title)))
            if name and len(name) <= PHRASE_CHARS:
                return name
    return None


def project_names(projects: Sequence[str | None], share: float = 0.75) -> list[str]:
    """The folder name of a project that at least ``share`` of the chunks come from (one at
    most): `/Users/sam/src/tidepool` → "tidepool"."""
    known = Counter(p.rstrip("/").rsplit("/", 1)[-1] for p in projects if p)
    return [name for name, n in known.most_common(1) if projects and n >= share * len(projects)]


def topic_title(texts: list[str], background: list[str], taken: set[str], titles: list[str],
                similarity: Similarity | None = None, projects: Sequence[str | None] = ()) -> str:
    """A new topic's article title: its best key phrase not ``taken`` (casefolded names).

    ``similarity`` (the cosine of phrases to the topic's centroid) weighs each phrase by how
    well it sums up the chunks: "Sourdough starter" over "Bubbles", the starter's name.
    ``projects`` are the chunks' projects (None for chat exports), see `project_names`.
    Falls back to a conversation title, and numbers the name (`Name 2`) only when every
    candidate is taken.
    """
    phrases = [title_case(p) for p in ranked_phrases(texts, background, titles, similarity=similarity,
                                                     projects=project_names(projects))]
    conversation = _title_from_conversations(titles)
    options = phrases[:5] + ([conversation] if conversation else [])
    for name in options:
        if name.casefold() not in taken:
            return name
    base = options[0] if options else "Untitled Topic"
    name, n = base, 2
    while name.casefold() in taken:
        name, n = f"{base} {n}", n + 1
    return name
