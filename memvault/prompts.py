"""Prompt templates: load `prompts/<stage>.txt`, render its `$var`s, and hash it with the Meta pages.

Templates are plain `string.Template` text with no logic; shaping the data is the stage's job.
Every call of a stage shares one system prompt — a short preamble plus only the Meta guidance
that stage uses (`STAGE_META`) — so the engine can reuse a prefilled KV cache for it
(`cache_prefix`). Chunking needs none: the owner's editorial rules and bucket examples in
front of a segmentation call only cost prompt tokens and give a small model text to copy.
A prompt's hash covers its template, the system template and the guidance it carries: it is
part of each unit's cache key, so editing any of them is visible to the stages
(docs/pipeline.md, "Prompts"); editing a page a stage does not read leaves its hash alone.

Every system prompt and every rendered prompt carries `MEMVAULT_SELF_CALL_SENTINEL` for a person
reading a server's chat log; ingest recognises memvault's own calls by the digests the engines
record (memvault.hygiene.selfcalls), never by that marker.
"""

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path

from memvault.errors import MemvaultError
from memvault.hygiene.noise import MEMVAULT_SELF_CALL_SENTINEL
from memvault.hygiene.topics import parse_topics

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
STAGES = ("chunk", "cluster", "synthesize")
# The Meta guidance each stage's system prompt carries. The bucket list reaches the cluster
# prompt itself (from the ledger); Article_Conventions governs what apply_reply writes, not
# what the model answers; Topics_to_Ignore goes in as its list of topics only.
STAGE_META: dict[str, tuple[str, ...]] = {
    "chunk": (),
    "cluster": ("Topics_to_Ignore",),
    "synthesize": ("Editorial_Guidelines", "Topics_to_Ignore"),
}
# Pages a stage's answers depend on without the system prompt showing them: the cluster prompt
# lists the buckets, so a changed Buckets.md re-asks chunks that fitted none before.
STAGE_KEYED: dict[str, tuple[str, ...]] = {"cluster": ("Buckets",)}


class PromptError(MemvaultError):
    """A prompt template is missing or needs a value the stage did not give."""


def _read(name: str, directory: Path) -> str:
    path = directory / f"{name}.txt"
    if not path.is_file():
        raise PromptError(f"prompt template {path} is missing — restore it from the memvault sources")
    return path.read_text(encoding="utf-8")


def meta_context(meta_dir: Path, pages: tuple[str, ...]) -> str:
    """The guidance of `pages`, each under a header line; "" when there is none to give.

    A missing page, or a Topics_to_Ignore that lists no topic, adds nothing: the model is
    not told about guidance that does not exist.
    """
    parts = []
    for name in pages:
        path = meta_dir / f"{name}.md"
        if not path.is_file():
            continue
        body = path.read_text(encoding="utf-8")
        if name == "Topics_to_Ignore":
            topics = parse_topics(body)
            if topics:
                parts.append("Leave out anything about these topics the owner listed in Meta/Topics_to_Ignore.md:\n"
                             + "\n".join(f"- {t}" for t in topics))
            continue
        parts.append(f"The owner's page Meta/{name}.md governs your work; follow it.\n"
                     f"=== Meta/{name}.md ===\n{body.strip()}")
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
    """Load `<directory>/<name>.txt` with the system template and the stage's Meta guidance from `meta_dir`."""
    template = _read(name, directory)
    system_template = _read("system", directory)
    meta = meta_context(meta_dir, STAGE_META.get(name, ()))
    guidance = f"\n{meta}\n" if meta else ""
    body = _substitute(system_template, "system", {"guidance": guidance}).rstrip("\n")
    system = f"{MEMVAULT_SELF_CALL_SENTINEL}\n{body}"
    keyed = [(meta_dir / f"{page}.md") for page in STAGE_KEYED.get(name, ())]
    extra = [p.read_text(encoding="utf-8") if p.is_file() else "" for p in keyed]
    digest = hashlib.sha256("\x1f".join((system_template, template, meta, *extra)).encode("utf-8")).hexdigest()[:16]
    return Prompt(name=name, template=template, system=system, hash=digest)


def prompt_hashes(meta_dir: Path, directory: Path = PROMPTS_DIR) -> dict[str, str]:
    """Hash of every stage's prompt for this vault (shown by `memvault model`)."""
    return {name: load_prompt(name, meta_dir, directory).hash for name in STAGES}
