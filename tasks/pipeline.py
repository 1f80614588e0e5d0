"""Pipeline order is data: the flow and the CLI's --only/--from/--until slice this tuple.

No prefect import here, so the CLI can offer the stage names without loading Prefect.
"""

from collections.abc import Sequence
from typing import Literal, get_args

from memvault.errors import UsageError

StageName = Literal["ingest", "chunk", "cluster", "synthesize", "wikify", "normalize", "changelog", "index"]
# The order of the names above is the order the nightly flow runs them in.
STAGES: tuple[StageName, ...] = get_args(StageName)


def select_stages(only: Sequence[str] | None = None, start: str | None = None, until: str | None = None) -> list[str]:
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


# The stages that write the vault (and so commit): refused on a wrong branch or mid-merge.
VAULT_STAGES = frozenset({"cluster", "synthesize", "wikify", "normalize", "changelog"})
