"""all-MiniLM-L6-v2 as an ONNX graph, written from the shipped safetensors weights with numpy.

The graph is the BERT encoder of the model's ``config.json`` followed by sentence-transformers'
own head for this model (``modules.json``: mean pooling over the attention mask, then L2
normalisation), so one session call turns token ids into the vectors sentence-transformers
gives. It is written op by op rather than traced through torch so that building it needs
neither torch nor a network, takes about a second, and can happen on any path — the first
query included — when the exported file is missing or damaged.

Inputs ``input_ids`` and ``attention_mask`` (int64, batch × tokens); output
``sentence_embedding`` (float32, batch × 384).

The weights go to a data file beside the graph (ONNX external data, each tensor at a
page-aligned offset) rather than inside it: onnxruntime then maps them from disk instead of
parsing a 90 MB protobuf and copying every tensor out of it, which halves a query process's
memory for the model (≈190 → ≈100 MB) and its load time.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np

# Bumped whenever the graph written here changes, so an older export is rebuilt.
GRAPH_VERSION = 2  # 2: weights as external data
OPSET = 17  # LayerNormalization
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"
ALIGN = 4096  # external tensors start on page boundaries, so they can be memory-mapped
INLINE_BYTES = 1024  # smaller tensors (shapes, scalars) stay in the graph


def _check_config(model_dir: Path) -> dict[str, Any]:
    """The encoder config, refused unless it is the BERT shape and head this graph writes."""
    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))]
    expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    wrong = {k: cfg.get(k) for k, v in expected.items() if cfg.get(k) != v}
    if wrong or modules != ["Transformer", "Pooling", "Normalize"] or not pooling.get("pooling_mode_mean_tokens"):
        raise ValueError(f"{model_dir} is not a mean-pooled, normalised BERT model (config {wrong}, modules {modules}); "
                         "the ONNX export only knows that shape")
    return dict(cfg)


def _externalise(model: Any, data_name: str) -> bytes:
    """Move the large initializers of ``model`` out to one data blob (returned), leaving in
    each tensor the name ``data_name``, the offset and the length of its bytes."""
    from onnx import TensorProto

    blob = bytearray()
    for tensor in model.graph.initializer:
        raw = tensor.raw_data
        if len(raw) < INLINE_BYTES:
            continue
        blob.extend(b"\0" * (-len(blob) % ALIGN))
        offset = len(blob)
        blob.extend(raw)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(len(raw)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return bytes(blob)


class _Graph:
    """The nodes and initializers of the graph being written, and the weights they come from."""

    def __init__(self, weights: dict[str, np.ndarray], eps: float) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.w, self.eps = weights, eps
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def linear(self, x: str, prefix: str, out: str) -> str:
        # torch's Linear stores (out, in); the graph multiplies by its transpose.
        wt = self.const(f"{prefix}.weight_t", self.w[f"{prefix}.weight"].T.astype(np.float32))
        b = self.const(f"{prefix}.bias", self.w[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, wt], f"{out}_mm"), b], out)

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        scale = self.const(f"{prefix}.weight", self.w[f"{prefix}.weight"])
        return self.op("LayerNormalization", [x, scale, self.const(f"{prefix}.bias", self.w[f"{prefix}.bias"])],
                       out, axis=-1, epsilon=self.eps)


def _embeddings(g: _Graph) -> str:
    # Word + absolute position + token type 0 (single-segment input), then LayerNorm.
    e, w = "embeddings", g.w
    # Positions 0 … tokens-1: the first rows of the position table.
    seq_len = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    words = g.op("Gather", [g.const(f"{e}.word", w[f"{e}.word_embeddings.weight"]), "input_ids"], "words", axis=0)
    pos = g.op("Slice", [g.const(f"{e}.position", w[f"{e}.position_embeddings.weight"]),
                         g.const("zero_1d", np.array([0], dtype=np.int64)), seq_len,
                         g.const("axis0", np.array([0], dtype=np.int64))], "pos")
    summed = g.op("Add", [g.op("Add", [words, pos], "words_pos"),
                          g.const(f"{e}.type0", w[f"{e}.token_type_embeddings.weight"][0])], "emb_sum")
    return g.layer_norm(summed, f"{e}.LayerNorm", "emb_out")


def _mask_bias(g: _Graph) -> tuple[str, str]:
    """The attention mask as floats, and the bias padded keys get before the softmax (a large
    negative number, as BERT's extended mask does)."""
    from onnx import TensorProto

    mask_f = g.op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = g.op("Sub", [g.const("one_f", np.array(1.0, dtype=np.float32)), mask_f], "mask_inv")
    big = g.const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32))
    bias = g.op("Unsqueeze", [g.op("Mul", [inv, big], "mask_bias2d"),
                              g.const("axes_12", np.array([1, 2], dtype=np.int64))], "mask_bias")
    return mask_f, bias


def _layer(g: _Graph, i: int, x: str, bias: str, shared: dict[str, str]) -> str:
    """Encoder layer ``i``: self-attention then the feed-forward block, each with a residual and LayerNorm."""
    p, a, split = f"encoder.layer.{i}", f"l{i}", shared["split"]

    def heads(kind: str, perm: list[int]) -> str:
        flat = g.linear(x, f"{p}.attention.self.{kind}", f"{a}_{kind[0]}")
        return g.op("Transpose", [g.op("Reshape", [flat, split], f"{a}_{kind[0]}4")], f"{a}_{kind[0]}t", perm=perm)

    q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
    scaled = g.op("Mul", [g.op("MatMul", [q, k], f"{a}_qk"), shared["scale"]], f"{a}_scaled")
    probs = g.op("Softmax", [g.op("Add", [scaled, bias], f"{a}_scores")], f"{a}_probs", axis=-1)
    ctx4 = g.op("Transpose", [g.op("MatMul", [probs, v], f"{a}_ctx4")], f"{a}_ctxt", perm=[0, 2, 1, 3])
    attn = g.linear(g.op("Reshape", [ctx4, shared["merge"]], f"{a}_ctx"), f"{p}.attention.output.dense", f"{a}_attn")
    x = g.layer_norm(g.op("Add", [attn, x], f"{a}_res1"), f"{p}.attention.output.LayerNorm", f"{a}_ln1")
    # GELU, the exact (erf) form BERT uses: 0.5 · h · (1 + erf(h / √2)).
    h = g.linear(x, f"{p}.intermediate.dense", f"{a}_up")
    erf = g.op("Erf", [g.op("Div", [h, shared["sqrt2"]], f"{a}_gdiv")], f"{a}_erf")
    gelu = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, "one_f"], f"{a}_gadd")], f"{a}_gmul"), shared["half"]],
                f"{a}_gelu")
    down = g.linear(gelu, f"{p}.output.dense", f"{a}_down")
    return g.layer_norm(g.op("Add", [down, x], f"{a}_res2"), f"{p}.output.LayerNorm", f"{a}_ln2")


def _pool(g: _Graph, x: str, mask_f: str) -> None:
    # Mean over real tokens (sentence-transformers clamps the count at 1e-9), then L2 (eps 1e-12).
    mask3 = g.op("Unsqueeze", [mask_f, g.const("axes_2", np.array([2], dtype=np.int64))], "mask3")
    total = g.op("ReduceSum", [g.op("Mul", [x, mask3], "masked"), "one_i_axes"], "tok_sum", keepdims=0)
    g.const("one_i_axes", np.array([1], dtype=np.int64))
    count = g.op("Clip", [g.op("ReduceSum", [mask3, "one_i_axes"], "tok_count", keepdims=0),
                          g.const("min_count", np.array(1e-9, dtype=np.float32))], "tok_count_c")
    mean = g.op("Div", [total, count], "mean")
    norm = g.op("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)  # axes an attribute before opset 18
    clipped = g.op("Clip", [norm, g.const("min_norm", np.array(1e-12, dtype=np.float32))], "norm_c")
    g.op("Div", [mean, clipped], OUTPUT)


def build_model(model_dir: Path, data_name: str) -> tuple[bytes, bytes]:
    """The serialised ONNX graph for the sentence-transformers model in ``model_dir`` and its
    weights, to be written as ``data_name`` beside the graph (which refers to it by that name)."""
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    cfg = _check_config(model_dir)
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads
    g = _Graph(load_file(str(model_dir / "model.safetensors")), float(cfg["layer_norm_eps"]))
    x = _embeddings(g)
    mask_f, bias = _mask_bias(g)
    shared = {
        "split": g.const("shape_heads", np.array([0, 0, heads, head_dim], dtype=np.int64)),
        "merge": g.const("shape_hidden", np.array([0, 0, hidden], dtype=np.int64)),
        "scale": g.const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32)),
        "sqrt2": g.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32)),
        "half": g.const("half", np.array(0.5, dtype=np.float32)),
    }
    for i in range(cfg["num_hidden_layers"]):
        x = _layer(g, i, x, bias, shared)
    _pool(g, x, mask_f)

    graph = helper.make_graph(
        g.nodes, "all_minilm_l6_v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="memvault")
    model.ir_version = 8
    onnx.checker.check_model(model)
    data = _externalise(model, data_name)
    return bytes(model.SerializeToString()), data
