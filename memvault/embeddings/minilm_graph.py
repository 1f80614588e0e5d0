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


def build_model(model_dir: Path, data_name: str) -> tuple[bytes, bytes]:
    """The serialised ONNX graph for the sentence-transformers model in ``model_dir`` and its
    weights, to be written as ``data_name`` beside the graph (which refers to it by that name)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    cfg = _check_config(model_dir)
    w = load_file(str(model_dir / "model.safetensors"))
    hidden, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], float(cfg["layer_norm_eps"])
    head_dim = hidden // heads
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        # torch's Linear stores (out, in); the graph multiplies by its transpose.
        wt = const(f"{prefix}.weight_t", w[f"{prefix}.weight"].T.astype(np.float32))
        b = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return op("Add", [op("MatMul", [x, wt], f"{out}_mm"), b], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return op("LayerNormalization", [x, const(f"{prefix}.weight", w[f"{prefix}.weight"]),
                                         const(f"{prefix}.bias", w[f"{prefix}.bias"])], out, axis=-1, epsilon=eps)

    # Embeddings: word + absolute position + token type 0 (single-segment input), then LayerNorm.
    e = "embeddings"
    # Positions 0 … tokens-1: the first rows of the position table.
    seq_len = op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    words = op("Gather", [const(f"{e}.word", w[f"{e}.word_embeddings.weight"]), "input_ids"], "words", axis=0)
    pos = op("Slice", [const(f"{e}.position", w[f"{e}.position_embeddings.weight"]),
                       const("zero_1d", np.array([0], dtype=np.int64)), seq_len, const("axis0", np.array([0], dtype=np.int64))],
             "pos")
    summed = op("Add", [op("Add", [words, pos], "words_pos"), const(f"{e}.type0", w[f"{e}.token_type_embeddings.weight"][0])],
                "emb_sum")
    x = layer_norm(summed, f"{e}.LayerNorm", "emb_out")

    # Padded keys get a large negative bias before the softmax (as BERT's extended mask does).
    mask_f = op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = op("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask_f], "mask_inv")
    bias = op("Unsqueeze", [op("Mul", [inv, const("neg_big", np.array(np.finfo(np.float32).min, dtype=np.float32))],
                               "mask_bias2d"), const("axes_12", np.array([1, 2], dtype=np.int64))], "mask_bias")
    split = const("shape_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge = const("shape_hidden", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))

    for i in range(cfg["num_hidden_layers"]):
        p, a = f"encoder.layer.{i}", f"l{i}"
        q = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.query", f"{a}_q"), split], f"{a}_q4")],
               f"{a}_qt", perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.key", f"{a}_k"), split], f"{a}_k4")],
               f"{a}_kt", perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [linear(x, f"{p}.attention.self.value", f"{a}_v"), split], f"{a}_v4")],
               f"{a}_vt", perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k], f"{a}_qk"), scale], f"{a}_scaled"), bias], f"{a}_scores")
        probs = op("Softmax", [scores], f"{a}_probs", axis=-1)
        ctx = op("Reshape", [op("Transpose", [op("MatMul", [probs, v], f"{a}_ctx4")], f"{a}_ctxt", perm=[0, 2, 1, 3]), merge],
                 f"{a}_ctx")
        attn = linear(ctx, f"{p}.attention.output.dense", f"{a}_attn")
        x = layer_norm(op("Add", [attn, x], f"{a}_res1"), f"{p}.attention.output.LayerNorm", f"{a}_ln1")
        # GELU, the exact (erf) form BERT uses: 0.5 · h · (1 + erf(h / √2)).
        h = linear(x, f"{p}.intermediate.dense", f"{a}_up")
        erf = op("Erf", [op("Div", [h, sqrt2], f"{a}_gdiv")], f"{a}_erf")
        gelu = op("Mul", [op("Mul", [h, op("Add", [erf, "one_f"], f"{a}_gadd")], f"{a}_gmul"), half], f"{a}_gelu")
        down = linear(gelu, f"{p}.output.dense", f"{a}_down")
        x = layer_norm(op("Add", [down, x], f"{a}_res2"), f"{p}.output.LayerNorm", f"{a}_ln2")

    # Mean over real tokens (sentence-transformers clamps the count at 1e-9), then L2 (eps 1e-12).
    mask3 = op("Unsqueeze", [mask_f, const("axes_2", np.array([2], dtype=np.int64))], "mask3")
    total = op("ReduceSum", [op("Mul", [x, mask3], "masked"), "one_i_axes"], "tok_sum", keepdims=0)
    const("one_i_axes", np.array([1], dtype=np.int64))
    count = op("Clip", [op("ReduceSum", [mask3, "one_i_axes"], "tok_count", keepdims=0),
                        const("min_count", np.array(1e-9, dtype=np.float32))], "tok_count_c")
    mean = op("Div", [total, count], "mean")
    norm = op("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)  # axes an attribute before opset 18
    op("Div", [mean, op("Clip", [norm, const("min_norm", np.array(1e-12, dtype=np.float32))], "norm_c")], OUTPUT)

    graph = helper.make_graph(
        nodes, "all_minilm_l6_v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="memvault")
    model.ir_version = 8
    onnx.checker.check_model(model)
    data = _externalise(model, data_name)
    return bytes(model.SerializeToString()), data
