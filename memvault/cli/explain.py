"""`memvault recall --explain`: each hit's score in words and numbers.

A hit's ``explain`` (``memvault.recall.scoring``) holds the raw matches, the weighted terms they
became, what lifted the hit from a neighbour, the gathered bonuses and the priors; they add up
to the score. This module writes them as a few lines a person can check, not as a dict.
"""

from collections.abc import Mapping

from memvault.ops.results import Explain, RecallHit

# The base terms: (raw match, its weighted term, what a person calls it).
_MATCHES = (("cos", "cos_term", "meaning (cosine)"), ("lexical", "lexical_term", "words (full text)"),
            ("rrf", "rrf_term", "both lists (rank fusion)"), ("exact", "exact_term", "exact phrase"))


# The question forms recall weighs differently (``memvault.recall.scoring._query_view``).
_FORMS = {"guess": "asks for a guess (would, might, likely): meaning weighed over words (guess_shift)"}


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _words(key: str, suffix: str) -> str:
    return key.removesuffix(suffix).replace("_", " ")


def _terms(explain: Mapping[str, object], suffix: str) -> list[str]:
    """The non-zero ``*_bonus`` or ``*_prior`` terms as "name +0.0123"."""
    return [f"{_words(k, suffix)} {_num(v):+.4f}" for k, v in explain.items()
            if k.endswith(suffix) and _num(v) != 0.0]


def explain_lines(explain: Explain) -> list[str]:
    """The lines that say how one hit's score adds up (empty when there is nothing to say)."""
    lines: list[str] = []
    matched = [f"{name} {_num(explain.get(raw)):.3f} → {_num(explain.get(term)):.4f}"
               for raw, term, name in _MATCHES if _num(explain.get(raw)) or _num(explain.get(term))]
    if "base" in explain:
        tier = f" × tier {_num(explain.get('tier')):g} ({explain.get('tier_name') or 'plain'})"
        lines.append(f"matched: base {_num(explain.get('base')):.4f} = "
                     + ("(" + " + ".join(matched) + ")" if matched else "no match of its own") + tier)
    if "sentence_cos" in explain:
        lines.append(f"meaning: its best sentence {_num(explain['sentence_cos']):.3f}, the turn in its context "
                     f"{_num(explain.get('context_cos')):.3f} (weighed together: w_sentence)")
    if form := _FORMS.get(str(explain.get("question_form"))):
        lines.append(f"question: {form}")
    if _num(explain.get("propagation")):
        lines.append(f"lifted {_num(explain['propagation']):.4f} from {explain.get('propagated_from')} "
                     f"(via {explain.get('propagated_via')})"
                     + (f", kin support {_num(explain.get('kin_support')):+.4f}" if _num(explain.get("kin_support")) else ""))
    if "relevance" in explain:
        lines.append(f"relevance {_num(explain['relevance']):.4f}"
                     + (" (the larger of base and lifted, plus kin support)" if _num(explain.get("propagation")) else ""))
    if bonuses := _terms(explain, "_bonus"):
        hop = explain.get("hop_terms")
        lines.append("bonuses: " + ", ".join(bonuses) + (f" (second hop looked for: {hop})" if hop else ""))
    if priors := _terms(explain, "_prior"):
        lines.append("priors: " + ", ".join(priors))
    if "total" in explain:
        lines.append(f"total {_num(explain['total']):.4f}")
    return lines


def explain_hit(hit: RecallHit) -> list[str]:
    """A hit's heading line (score, path, citation), then its explanation indented."""
    return [f"{hit['score']:.4f}  {hit['path']}  ({hit['kind']}, {hit['cite']})",
            *("    " + line for line in explain_lines(hit["explain"]))]
