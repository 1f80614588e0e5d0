"""Meta/Buckets.md: the list of buckets (article topics) a person reads and edits, and that the
cluster stage appends to — its whole reading and writing, in one place.

The page is a `# Buckets` heading, then one `## Name` section per bucket with a paragraph
describing it. A person may add a section by hand (the cluster stage honours it) or delete
one; `memvault forget` removes the section of a forgotten bucket. Names are matched case-,
space- and underscore-insensitively, as the model's answers are (memvault/stages/cluster_model.py).
"""

import re

from stores.vault import Vault

PAGE = "Buckets.md"
HEADER = "# Buckets\n"
_HEADING = re.compile(r"^##\s+(.+?)\s*$")


def bucket_key(name: str) -> str:
    """A bucket name as it is compared: single spaces for underscores and runs of space, casefolded."""
    return " ".join(name.replace("_", " ").split()).casefold()


def parse_buckets(text: str) -> dict[str, str]:
    """`## Name` headings with the paragraph under each → {name: description}."""
    out: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            current = m.group(1)
            out[current] = ""
        elif current is not None and line.strip() and not line.startswith("#"):
            out[current] = (out[current] + " " + line.strip()).strip()
    return out


def append_buckets(text: str, new: dict[str, str]) -> str:
    """``text`` with a `## name` section per new bucket at the end."""
    body = text.rstrip("\n")
    for name, description in new.items():
        body += f"\n\n## {name}\n\n{description}"
    return body + "\n"


def remove_bucket_section(text: str, name: str) -> str:
    """``text`` without the `## name` section (matched case-insensitively)."""
    out: list[str] = []
    skipping = False
    for line in text.split("\n"):
        if line.startswith("## "):
            skipping = line[3:].strip().casefold() == name.strip().casefold()
        if not skipping:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out))


class BucketsPage:
    """Meta/Buckets.md of one vault; every write is atomic (through :class:`Vault`)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.meta_dir / PAGE

    def read(self) -> dict[str, str]:
        """The buckets listed on the page (none when it is missing): {name: description}."""
        return parse_buckets(self.vault.read(self.path) or HEADER)

    def add(self, buckets: dict[str, str]) -> int:
        """Append the buckets not listed yet (the page is created when missing); returns how many."""
        text = self.vault.read(self.path) or HEADER
        have = {bucket_key(n) for n in parse_buckets(text)}
        new = {n: d for n, d in buckets.items() if bucket_key(n) not in have}
        if new:
            self.vault.write(self.path, append_buckets(text, new))
        return len(new)

    def remove(self, name: str) -> bool:
        """Drop the section of ``name``; returns whether the page changed (a missing page is left missing)."""
        text = self.vault.read(self.path)
        if text is None:
            return False
        return self.vault.write(self.path, remove_bucket_section(text, name))
