"""The figures of `bench/recall_quality.py`: turn R@k and session R@k per question, summed
overall and per LoCoMo category, and the left-one-conversation-out reports of a sweep and of
the fusion variant families."""

from collections import defaultdict
from typing import Any

TURN_KS, SESSION_KS = (5, 10, 25), (2, 5)


def session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


# ../shared/eval/README.md: the LoCoMo category numbers.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
FIGURES = [f"turn_R@{k}" for k in TURN_KS] + [f"session_R@{k}" for k in SESSION_KS]


def recall_at(ranked: list[str], gold: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def session_ranking(turns: list[str]) -> list[str]:
    seen: list[str] = []
    for t in turns:
        s = session_of(t)
        if s not in seen:
            seen.append(s)
    return seen


class Tally:
    """Sums of every figure over questions, overall and per LoCoMo category."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = defaultdict(float)
        self.n = 0
        self.by_category: dict[int, Tally] = {}

    def add(self, ranked: list[str], gold: list[str], category: int | None = None) -> None:
        self.n += 1
        for k in TURN_KS:
            self.sums[f"turn_R@{k}"] += recall_at(ranked, gold, k)
        gold_sessions = sorted({session_of(g) for g in gold})
        ranked_sessions = session_ranking(ranked)
        for k in SESSION_KS:
            self.sums[f"session_R@{k}"] += recall_at(ranked_sessions, gold_sessions, k)
        if category is not None:
            self.by_category.setdefault(category, Tally()).add(ranked, gold)

    def merge(self, other: "Tally") -> None:
        for k, v in other.sums.items():  # adds, as Counter.update did
            self.sums[k] += v
        self.n += other.n
        for cat, tally in other.by_category.items():
            self.by_category.setdefault(cat, Tally()).merge(tally)

    def result(self) -> dict[str, float]:
        return {k: round(self.sums[k] / self.n, 4) if self.n else 0.0 for k in FIGURES}

    def categories(self) -> dict[str, dict[str, Any]]:
        return {CATEGORIES.get(c, str(c)): {"n": t.n, **t.result()} for c, t in sorted(self.by_category.items())}

    def mean(self) -> float:
        """The mean of the five figures: what a variant is chosen by (no single depth wins)."""
        return sum(self.sums[k] for k in FIGURES) / (len(FIGURES) * self.n) if self.n else 0.0


def sweep_report(sweep: tuple[str, list[float]], per_conversation: dict[str, dict[str, Tally]]) -> dict[str, Any]:
    """Turn R@10 of each value per conversation, and left-one-conversation-out: for each
    conversation, the value best on the others, scored on it (a check on unseen data)."""
    name, values = sweep
    keys = [f"{name}={v:g}" for v in values]

    def r10(tallies: list[Tally]) -> float:
        n = sum(t.n for t in tallies)
        return sum(t.sums["turn_R@10"] for t in tallies) / n if n else 0.0

    out: dict[str, Any] = {"per_conversation": {c: {k: round(r10([t[k]]), 4) for k in keys}
                                                for c, t in per_conversation.items()}}
    chosen, held_out = {}, []
    for conv in per_conversation:
        others = [t for c, t in per_conversation.items() if c != conv]
        best = max(keys, key=lambda k: r10([t[k] for t in others])) if others else keys[0]
        chosen[conv] = best
        held_out.append(per_conversation[conv][best])
    out["left_one_out"] = {"chosen": chosen, "turn_R@10": round(r10(held_out), 4)}
    return out



def loo_report(families: dict[str, list[str]], per_conversation: dict[str, dict[str, Tally]]) -> dict[str, Any]:
    """Left one conversation out, per family of variants: for each conversation, the member
    with the best mean figure on the other conversations, scored on it; the held-out figures
    summed over conversations (what a choice made on this data is worth on unseen data)."""
    out: dict[str, Any] = {}
    for family, members in families.items():
        chosen: dict[str, str] = {}
        held = Tally()
        for conv, tallies in per_conversation.items():
            def on_others(name: str) -> float:
                t = Tally()
                for c, other in per_conversation.items():
                    if c != conv:
                        t.merge(other[name])
                return t.mean()
            best = max(members, key=on_others)
            chosen[conv] = best
            held.merge(tallies[best])
        out[family] = {"chosen": chosen, **held.result(), "categories": held.categories()}
    return out
