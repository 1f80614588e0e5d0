"""Prompt templates: load `prompts/<stage>.txt`, render its `$var`s, and hash it with the Meta pages.

Templates are plain `string.Template` text with no logic; shaping the data is the stage's job.
Every call shares one system prompt — a short preamble plus the vault's Meta pages — so the
engine can reuse a prefilled KV cache for it (`cache_prefix`). A prompt's hash covers its
template, the system template and the Meta pages: it is part of each unit's cache key, so
editing any of them is visible to the stages (docs/pipeline.md, "Prompts").

Every system prompt and every rendered prompt carries `MEMVAULT_SELF_CALL_SENTINEL` for a person
reading a server's chat log; ingest recognises memvault's own calls by the digests the engines
record (memvault.selfcalls), never by that marker.
"""

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

from memvault.errors import MemvaultError
from memvault.noise import MEMVAULT_SELF_CALL_SENTINEL

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
META_PAGES = ("Editorial_Guidelines", "Article_Conventions", "Buckets", "Topics_to_Ignore")
STAGES = ("chunk", "cluster", "synthesize")


class PromptError(MemvaultError):
    """A prompt template is missing or needs a value the stage did not give."""


def _read(name: str, directory: Path) -> str:
    path = directory / f"{name}.txt"
    if not path.is_file():
        raise PromptError(f"prompt template {path} is missing — restore it from the memvault sources")
    return path.read_text(encoding="utf-8")


def meta_context(meta_dir: Path) -> str:
    """The governing Meta pages, each under a header line; a missing page is said to be missing."""
    parts = []
    for name in META_PAGES:
        path = meta_dir / f"{name}.md"
        body = path.read_text(encoding="utf-8").strip() if path.is_file() else "(this page does not exist)"
        parts.append(f"=== Meta/{name}.md ===\n{body}")
    return "\n\n".join(parts)


def _substitute(template: str, name: str, values: dict[str, object]) -> str:
    tpl = string.Template(template)
    wanted = {m.group("named") or m.group("braced") for m in tpl.pattern.finditer(template)} - {None}
    missing = sorted(wanted - set(values))
    if missing:
        raise PromptError(f"prompt {name!r} needs {', '.join('$' + m for m in missing)} — "
                          "the stage did not provide it (was the template edited?)")
    try:
        return tpl.substitute({k: str(v) for k, v in values.items()})
    except ValueError as exc:  # a lone `$` in the template
        raise PromptError(f"prompt {name!r} has an invalid placeholder ({exc}); write a literal $ as $$") from exc


@dataclass(frozen=True)
class Prompt:
    """One stage's prompt, bound to the Meta pages of one vault."""

    name: str
    template: str
    system: str  # shared by every stage and call: pass it as `cache_prefix` too
    hash: str

    def render(self, **values: object) -> str:
        """The user prompt; PromptError names any `$var` left without a value."""
        return f"{MEMVAULT_SELF_CALL_SENTINEL}\n{_substitute(self.template, self.name, values)}"


def load_prompt(name: str, meta_dir: Path, directory: Path = PROMPTS_DIR) -> Prompt:
    """Load `<directory>/<name>.txt` with the system template and the Meta pages of `meta_dir`."""
    template = _read(name, directory)
    system_template = _read("system", directory)
    meta = meta_context(meta_dir)
    system = f"{MEMVAULT_SELF_CALL_SENTINEL}\n{_substitute(system_template, 'system', {'meta': meta})}"
    digest = hashlib.sha256("\x1f".join((system_template, template, meta)).encode("utf-8")).hexdigest()[:16]
    return Prompt(name=name, template=template, system=system, hash=digest)


def prompt_hashes(meta_dir: Path, directory: Path = PROMPTS_DIR) -> dict[str, str]:
    """Hash of every stage's prompt for this vault (shown by `memvault model`)."""
    return {name: load_prompt(name, meta_dir, directory).hash for name in STAGES}
