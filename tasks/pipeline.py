"""Pipeline order is data: the flow and the CLI's --only/--from/--until slice this tuple."""

from memvault.errors import UsageError

STAGES: tuple[str, ...] = (
    "ingest", "chunk", "cluster", "synthesize", "wikify", "normalize", "changelog", "index",
)


def select_stages(only: list[str] | None = None, start: str | None = None, until: str | None = None) -> list[str]:
    """The stages to run, in pipeline order; unknown names are a usage error."""
    for name in [*(only or []), *(s for s in (start, until) if s)]:
        if name not in STAGES:
            raise UsageError(f"unknown stage {name!r}; stages are: {', '.join(STAGES)}")
    if only:
        if start or until:
            raise UsageError("use either --only or --from/--until, not both")
        return [s for s in STAGES if s in only]
    lo = STAGES.index(start) if start else 0
    hi = STAGES.index(until) if until else len(STAGES) - 1
    if lo > hi:
        raise UsageError(f"--from {start} comes after --until {until}")
    return list(STAGES[lo:hi + 1])
