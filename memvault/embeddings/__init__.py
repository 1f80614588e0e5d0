"""Sentence embedders: one protocol, one module per embedder.

- ``minilm``: all-MiniLM-L6-v2 on onnxruntime (the default; English-only), with its ONNX
  graph written by ``minilm_graph``;
- ``static``: a token table distilled from MiniLM (far cheaper, slightly lower recall);
- ``http``: any OpenAI-compatible ``POST /embeddings`` server (Ollama, LM Studio, llama.cpp,
  vLLM), for the user's own model — a multilingual one gives cross-language recall;
- ``cache``: a content-hash cache in front of any of them, so a text is embedded once;
- ``select``: the embedder a home's settings name (index and query both come there).

This package's root holds only the protocol and the names, so importing it loads no model.
"""

from memvault.embeddings.base import DIM, INT8_NAME, MODEL_DIMS, MODEL_NAME, STATIC_NAME, Embedder

__all__ = ["DIM", "INT8_NAME", "MODEL_DIMS", "MODEL_NAME", "STATIC_NAME", "Embedder"]
