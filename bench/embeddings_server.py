"""A sentence-transformers model folder served as an OpenAI-compatible embeddings endpoint.

For benchmarks of "the user's own embedder" (``[embeddings] url``) with a real model where no
Ollama or LM Studio runs: ``POST /v1/embeddings`` with ``{"model": …, "input": [texts]}``
answers ``{"data": [{"index": i, "embedding": [floats]}]}``, the shape memvault's HTTP embedder
reads. Loopback only, one request at a time, torch on the CPU (sentence-transformers and torch
are test dependencies, not the product's).

    python bench/embeddings_server.py --model DIR [--port 8765] [--threads 2]

Then, e.g., ``bench/recall_quality.py … --set embeddings.url=http://127.0.0.1:8765/v1
--set embeddings.model=NAME``. The README says where a model folder comes from.
"""

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def make_server(model_dir: Path, port: int = 0, threads: int = 2, batch_size: int = 32) -> tuple[ThreadingHTTPServer, int]:
    """The server, bound on 127.0.0.1 (``port`` 0: a free one), not yet serving, and the model's dimension."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_dir), device="cpu")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, code: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._answer(404, {"error": {"message": f"no route {self.path}; POST /v1/embeddings"}})
                return
            try:
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
            except (ValueError, KeyError, TypeError) as exc:
                self._answer(400, {"error": {"message": f"expected JSON with an input list ({exc})"}})
                return
            with lock, torch.inference_mode():
                vectors = model.encode([str(t) for t in texts], batch_size=batch_size, normalize_embeddings=True)
            self._answer(200, {"object": "list", "model": payload.get("model"),
                               "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in row]}
                                        for i, row in enumerate(vectors)]})

    return ThreadingHTTPServer(("127.0.0.1", port), Handler), int(model.get_embedding_dimension() or 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="a sentence-transformers model folder")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    if not (args.model / "modules.json").is_file():
        ap.error(f"{args.model} is not a sentence-transformers folder (no modules.json)")
    server, dimensions = make_server(args.model, args.port, args.threads, args.batch_size)
    print(f"serving {args.model.name} ({dimensions} dimensions) at "
          f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
