"""cluster, no-model path: a conversation's project as evidence for or against a bucket.

A project is the folder a coding agent ran in (Claude Code, Codex and pi record it); chat
exports have none. Two chunks of different known projects, or a chunk and a bucket holding
only other projects' chunks, need a higher similarity to meet (memvault.stages.cluster_centroid applies
the `cluster.project_margin`).
"""

from collections.abc import Iterable

import numpy as np

from memvault.naming.scripts import mixed


def related(a: str, b: str) -> bool:
    """Same project: one folder, or one inside the other (a session started in a subfolder)."""
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def other_project(project: str | None, bucket_projects: Iterable[str]) -> bool:
    """True when a chunk of ``project`` meets a bucket whose chunks all come from other projects."""
    known = list(bucket_projects)
    return project is not None and bool(known) and not any(related(project, p) for p in known)


def apart_matrix(projects: list[str | None]) -> np.ndarray:
    """1 where two chunks come from different known projects, else 0."""
    n = len(projects)
    out = np.zeros((n, n), dtype=np.float32)
    for i in range(n):
        for j in range(i + 1, n):
            other = projects[j]
            if other is not None and other_project(projects[i], [other]):
                out[i, j] = out[j, i] = 1.0
    return out


def script_apart(scripts: list[str]) -> np.ndarray:
    """1 where two chunks are written in different scripts (memvault.naming.scripts), else 0."""
    n = len(scripts)
    out = np.zeros((n, n), dtype=np.float32)
    for i in range(n):
        for j in range(i + 1, n):
            if mixed([scripts[i], scripts[j]]):
                out[i, j] = out[j, i] = 1.0
    return out
