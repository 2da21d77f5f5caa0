"""Embeddings: the bundled English-only model (SYNAPSE_EMBEDDINGS=local-english: offline,
pinned, meaningful) and an OpenAI-compatible API. The default multilingual model has its own
tests (test_embeddings_e5.py).

The model loads once for the whole run (`embedder`); the tests that must load it themselves
(offline, refused files) build their own LocalEmbedder. The API tests talk to a real
embeddings server on 127.0.0.1, started here and backed by the bundled model.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

import memories.embeddings as embeddings
from memories.embeddings import EmbeddingsError, ModelFileRefused, get_embedder
from memories.embeddings import e5 as e5_model
from memories.embeddings import local as local_model
from memories.embeddings.e5 import E5Embedder
from memories.embeddings.int8 import (
    integer_product,
    integer_weights,
    signed_products_are_exact,
)
from memories.embeddings.local import LocalEmbedder
from memories.embeddings.remote import BATCH_SIZE, RemoteEmbedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def embedder():
    with override_settings(SYNAPSE_EMBEDDINGS="local-english"):
        loaded = get_embedder()
    assert isinstance(loaded, LocalEmbedder)
    return loaded


def cosine(a, b) -> float:
    return float(np.dot(a, b))


# --- The bundled model ------------------------------------------------------------------------


@pytest.mark.parametrize("model", [LocalEmbedder, E5Embedder], ids=["english", "multilingual"])
def test_loads_and_embeds_with_the_network_off(monkeypatch, model):
    def no_network(*args, **kwargs):
        raise AssertionError("the embedding model tried to use the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)

    offline = model()
    documents = offline.embed_documents(["Has a border collie named Pixel.", "Born in Cork."])
    query = offline.embed_query("does he have any animals")

    assert documents.shape == (2, 384) and documents.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1, atol=1e-5)
    assert cosine(documents[0], query) > cosine(documents[1], query)


def test_the_process_loads_the_model_once_however_many_threads_ask(monkeypatch):
    built = []

    class Counted:
        def __init__(self, *, threads):
            built.append(threads)
            time.sleep(0.05)  # a slow load: the other threads ask meanwhile

    monkeypatch.setattr(embeddings, "_embedders", {})
    monkeypatch.setattr(e5_model, "E5Embedder", Counted)
    start = threading.Barrier(8)
    got = []

    def ask():
        start.wait()
        got.append(get_embedder())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert built == [1]
    assert len(got) == 8 and all(e is got[0] for e in got)


def test_the_english_model_is_a_setting(embedder):
    with override_settings(SYNAPSE_EMBEDDINGS="local-english"):
        assert get_embedder() is embedder
    assert get_embedder() is not embedder  # `local`: the multilingual model
    assert embedder.model == "minilm-l6-v2-int8-exact"
    assert embedder.dimensions == 384


@pytest.mark.parametrize("which", ["model", "tokenizer"])
def test_a_file_with_another_hash_is_refused(tmp_path, which):
    original = local_model.model_path() if which == "model" else local_model.TOKENIZER_PATH
    tampered = tmp_path / original.name
    data = bytearray(original.read_bytes())
    data[len(data) // 2] ^= 0x01
    tampered.write_bytes(bytes(data))

    with pytest.raises(ModelFileRefused) as refused:
        LocalEmbedder(**{f"{which}_file": tampered})

    message = str(refused.value)
    pinned = local_model.MODEL_SHA256 if which == "model" else local_model.TOKENIZER_SHA256
    assert str(tampered) in message
    assert pinned in message
    assert refused.value.actual in message and refused.value.actual != pinned


def test_an_untouched_copy_of_the_files_is_accepted(tmp_path):
    copy = tmp_path / "model.onnx"
    shutil.copyfile(local_model.model_path(), copy)
    assert LocalEmbedder(model_file=copy).embed_query("hello").shape == (384,)


def test_the_tokenizer_is_bert_base_uncased(embedder):
    tokenizer = embedder._tokenizer
    assert tokenizer.get_vocab_size() == 30_522
    ids = {t: tokenizer.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    assert ids == {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    assert tokenizer.token_to_id("the") == 1996
    assert tokenizer.encode("Hello, World!").ids == [101, 7592, 1010, 2088, 999, 102]


def test_the_vectors_are_the_models(embedder):
    """The published figure for this pair with all-MiniLM-L6-v2 is 0.7553 (float32 weights)."""
    food, bread, horse, movie = embedder.embed_documents(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "A man is riding a horse.",
            "The new movie is awesome.",
        ]
    )
    assert cosine(food, bread) == pytest.approx(0.7553, abs=0.01)
    assert cosine(food, horse) < 0.4
    assert cosine(food, movie) < 0.1


def test_a_paraphrase_ranks_above_unrelated_memories(embedder):
    memories = [
        "Has a border collie named Pixel.",
        "Reports to Priya Raman, engineering manager of the platform group.",
        "Drives a 2019 Nissan Leaf and charges it in the office garage.",
        "Severe peanut allergy; carries an EpiPen.",
    ]
    matrix = embedder.embed_documents(memories)
    for question, expected in [
        ("who is his boss", 1),
        ("does he have any animals", 0),
        ("what vehicle does he own", 2),
        ("is there any food he must avoid", 3),
    ]:
        assert int(np.argmax(matrix @ embedder.embed_query(question))) == expected, question


def test_a_text_gets_the_same_vector_whatever_is_embedded_beside_it(embedder):
    texts = [f"Memory number {i}: " + "words " * (i * 7 % 40) for i in range(70)]
    texts[10:10] = [" ".join(f"long{i}" for i in range(300)), ""]  # past 256 tokens, none
    together = embedder.embed_documents(texts)
    one_by_one = np.stack([embedder.embed_query(t) for t in texts])
    assert together.shape == (72, 384)
    assert np.array_equal(together, one_by_one)
    assert np.array_equal(embedder.embed_documents(texts[::-1])[::-1], together)


def test_the_weights_stay_int8():
    model = onnx.load(str(local_model.model_path()))
    stored = Counter(node.op_type for node in model.graph.node)
    rewritten = onnx.load_from_string(
        integer_weights(
            model.SerializeToString(),
            products=local_model.INT8_PRODUCTS,
            lookups=local_model.INT8_LOOKUPS,
        )
    )
    ops = Counter(node.op_type for node in rewritten.graph.node)
    assert stored["MatMulInteger"] == 0
    assert ops["MatMulInteger"] == local_model.INT8_PRODUCTS == 36
    assert ops["MatMul"] == stored["MatMul"] - 36  # what is left multiplies activations
    assert ops["Gather"] == stored["Gather"] + 2  # each table's rows, then their scales
    # No int8 weight is turned into float32 any more.
    int8 = {t.name for t in rewritten.graph.initializer if t.data_type == onnx.TensorProto.INT8}
    assert not [n for n in rewritten.graph.node if n.op_type == "Cast" and n.input[0] in int8]


def test_a_graph_with_other_weight_products_is_refused():
    data = local_model.model_path().read_bytes()
    with pytest.raises(EmbeddingsError, match="36 int8 weight products and 2 int8 lookups where"):
        integer_weights(data, products=35, lookups=2)
    with pytest.raises(EmbeddingsError, match="where 36 and 3 were expected"):
        integer_weights(data, products=36, lookups=3)


def test_unsigned_weights_are_the_same_weights_shifted():
    data = local_model.model_path().read_bytes()
    counts = {"products": local_model.INT8_PRODUCTS, "lookups": local_model.INT8_LOOKUPS}
    signed = onnx.load_from_string(integer_weights(data, **counts))
    unsigned = onnx.load_from_string(integer_weights(data, **counts, unsigned=True))
    weights = {n.input[1] for n in unsigned.graph.node if n.op_type == "MatMulInteger"}
    assert len(weights) == 36
    before = {t.name: onnx.numpy_helper.to_array(t) for t in signed.graph.initializer}
    after = {t.name: onnx.numpy_helper.to_array(t) for t in unsigned.graph.initializer}
    for name in weights:
        assert before[name].dtype == np.int8 and after[name].dtype == np.uint8
        assert np.array_equal(after[name].astype(np.int16) - 128, before[name])
    zero = "int8_weight_zero_point"
    assert (before[zero].dtype, int(before[zero])) == (np.int8, 0)
    assert (after[zero].dtype, int(after[zero])) == (np.uint8, 128)


def test_the_weight_products_are_exact_on_this_cpu():
    """Exact sums give every CPU the same vectors; without VNNI, onnxruntime's uint8-by-int8
    products saturate, and the model then runs on uint8 weights."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, size=(9, 384), dtype=np.uint8)
    x[0] = 255  # the widest pairs: 2 * 255 * 127 overflows 16 bits
    w = rng.integers(-128, 128, size=(384, 96), dtype=np.int8)
    w[:, 0] = 127
    exact = x.astype(np.int64) @ w.astype(np.int64)
    chosen = not signed_products_are_exact()

    assert np.array_equal(integer_product(x, w, unsigned=chosen), exact)
    assert np.array_equal(integer_product(x, w, unsigned=True), exact)
    signed_exact = np.array_equal(integer_product(x, w, unsigned=False), exact)
    assert signed_exact == signed_products_are_exact()


def test_int8_products_agree_with_the_file_run_as_stored(embedder):
    """The file run as stored (its weights folded to float32 by onnxruntime) and run on int8
    give nearly the same vectors."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    as_stored = LocalEmbedder.__new__(LocalEmbedder)
    as_stored._tokenizer = embedder._tokenizer
    as_stored._session = onnxruntime.InferenceSession(
        str(local_model.model_path()), sess_options=options
    )
    texts = [
        "Has a border collie named Pixel.",
        "Reports to Priya Raman, engineering manager of the platform group.",
        "Prefers pytest over unittest; runs the suite before every push.",
        "Deploys the invoice app with docker compose on the Hetzner box, every Friday.",
        "who is his boss",
    ]
    agreement = (embedder.embed_documents(texts) * as_stored.embed_documents(texts)).sum(axis=1)
    assert agreement.min() > 0.98


def test_long_texts_are_cut_to_what_the_model_reads(embedder):
    long = " ".join(f"word{i}" for i in range(20_000))  # far past 256 tokens and MAX_CHARS
    head = long[: local_model.MAX_CHARS // 4]  # still well past 256 tokens
    vector = embedder.embed_query(long)
    assert np.isfinite(vector).all()
    assert cosine(vector, embedder.embed_query(head)) == pytest.approx(1, abs=1e-5)


def test_nothing_to_embed(embedder):
    assert embedder.embed_documents([]).shape == (0, 384)
    assert embedder.embed_query("").shape == (384,)
    with pytest.raises(TypeError):
        embedder.embed_documents("one text")


def test_threads_embedding_at_once_get_the_same_vectors(embedder):
    texts = ["Has a border collie named Pixel.", "Born on 3 May 1991 in Cork, Ireland."]
    expected = embedder.embed_documents(texts)
    results = []

    def embed():
        results.append(embedder.embed_documents(texts))

    threads = [threading.Thread(target=embed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    assert all(np.allclose(r, expected, atol=1e-6) for r in results)


# --- Settings ---------------------------------------------------------------------------------


@override_settings(SYNAPSE_EMBEDDINGS="off")
def test_off_gives_no_embedder():
    assert get_embedder() is None


def settings_with(tmp_path, monkeypatch, **env) -> dict:
    """synapse_site/settings.py executed with these variables, as a server start reads it."""
    for name in [n for n in os.environ if n.startswith("SYNAPSE_EMBEDDINGS")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SYNAPSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "synapse_site" / "settings.py"))


CHOICES = "use local, local-english, off, or the"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"SYNAPSE_EMBEDDINGS": "on"}, CHOICES),
        ({"SYNAPSE_EMBEDDINGS": "ollama"}, CHOICES),
        ({"SYNAPSE_EMBEDDINGS": "ftp://127.0.0.1/v1"}, CHOICES),
        ({"SYNAPSE_EMBEDDINGS": "http://"}, CHOICES),
        (
            {"SYNAPSE_EMBEDDINGS": "http://127.0.0.1:port/v1"},
            CHOICES,
        ),
        ({"SYNAPSE_EMBEDDINGS": "http://me:pw@127.0.0.1/v1"}, "the key goes in"),
        (
            {"SYNAPSE_EMBEDDINGS": "http://127.0.0.1/v1?key=1"},
            CHOICES,
        ),
        ({"SYNAPSE_EMBEDDINGS": "http://127.0.0.1:11434/v1"}, "set SYNAPSE_EMBEDDINGS_MODEL"),
        ({"SYNAPSE_EMBEDDINGS_MODEL": "nomic-embed-text"}, "names a model of an embeddings API"),
        ({"SYNAPSE_EMBEDDINGS_TIMEOUT": "0"}, "must be 1 or more"),
        ({"SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT": "0"}, "must be 1 or more"),
        ({"SYNAPSE_EMBEDDINGS_THREADS": "two"}, "is not a whole number"),
        ({"SYNAPSE_EMBEDDINGS_MAX_TOKENS": "32"}, "must be 64 or more"),
    ],
)
def test_a_bad_embeddings_setting_is_refused(tmp_path, monkeypatch, env, says):
    with pytest.raises(ImproperlyConfigured, match=says):
        settings_with(tmp_path, monkeypatch, **env)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("local", "", "")),
        ({"SYNAPSE_EMBEDDINGS": "Local-English"}, ("local-english", "", "")),
        ({"SYNAPSE_EMBEDDINGS": "OFF", "SYNAPSE_EMBEDDINGS_MODEL": "x"}, ("off", "x", "")),
        (
            {
                "SYNAPSE_EMBEDDINGS": "https://api.openai.com/v1",
                "SYNAPSE_EMBEDDINGS_MODEL": "text-embedding-3-small",
                "SYNAPSE_EMBEDDINGS_KEY": "sk-1",
            },
            ("https://api.openai.com/v1", "text-embedding-3-small", "sk-1"),
        ),
    ],
)
def test_good_embeddings_settings_are_read(tmp_path, monkeypatch, env, expected):
    read = settings_with(tmp_path, monkeypatch, **env)
    names = ("SYNAPSE_EMBEDDINGS", "SYNAPSE_EMBEDDINGS_MODEL", "SYNAPSE_EMBEDDINGS_KEY")
    assert tuple(read[name] for name in names) == expected


@pytest.mark.slow
def test_the_server_refuses_to_start_on_a_bad_embeddings_value(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_EMBEDDINGS")}
    env.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_EMBEDDINGS="remote",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "SYNAPSE_EMBEDDINGS='remote': use local, local-english, off, or the" in result.stderr


# --- An OpenAI-compatible embeddings API --------------------------------------------------------


class EmbeddingsServer:
    """POST /v1/embeddings as OpenAI answers it, with the bundled model behind it.

    It answers in its own way where the protocol allows (vectors not normalised, `data` in
    reverse order), and the model asked for picks a failure: "missing" is a 404, "broken" a
    500, "silent" never answers, "moved" redirects, "garbage" answers no JSON, "short" one
    vector too few. It wants `Bearer sk-test` when `key_required`.
    """

    def __init__(self, embedder):
        self.embedder = embedder
        self.requests: list[dict] = []
        self.key_required = True
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                server.answer(self, body)

            def do_GET(self):
                server.requests.append({"path": self.path, "body": None, "auth": None})
                server.send(self, 404, {"error": {"message": "no such route"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def answer(self, handler, body):
        model = body.get("model")
        if handler.path != "/v1/embeddings":
            return self.send(handler, 404, {"error": {"message": "no such route"}})
        if self.key_required and handler.headers.get("Authorization") != "Bearer sk-test":
            return self.send(handler, 401, {"error": {"message": "Incorrect API key provided."}})
        if model == "missing":
            return self.send(handler, 404, {"error": 'model "missing" not found, try pulling it'})
        if model == "broken":
            return self.send(handler, 500, {"error": {"message": "CUDA out of memory"}})
        if model == "silent":
            self.release.wait(30)
            return None
        if model == "moved":
            handler.send_response(302)
            handler.send_header("Location", f"http://127.0.0.1:{self.httpd.server_port}/v2")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return None
        if model == "garbage":
            return self.send(handler, 200, "<html>It works!</html>")
        texts = body["input"]
        vectors = self.embedder.embed_documents(texts) * 3.0
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        if model == "short":
            data = data[1:]
        return self.send(handler, 200, {"object": "list", "data": data[::-1], "model": model})

    @staticmethod
    def send(handler, status, payload):
        raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


@pytest.fixture(scope="module")
def api_server(embedder):
    server = EmbeddingsServer(embedder)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def api(api_server, monkeypatch):
    # Straight to 127.0.0.1, whatever proxy the environment names.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    api_server.requests.clear()
    api_server.key_required = True
    return api_server


def remote(api, model="minilm", key="sk-test", timeout=10.0, query_timeout=10.0):
    return RemoteEmbedder(
        base_url=api.base_url + "/",
        model=model,
        key=key,
        timeout=timeout,
        query_timeout=query_timeout,
    )


def test_an_api_gives_the_vectors_of_its_model(api, embedder):
    texts = ["Has a border collie named Pixel.", "Reports to Priya Raman.", "Born in Cork."]
    client = remote(api)

    vectors = client.embed_documents(texts)
    query = client.embed_query("who is his boss")

    assert client.model == "remote:minilm"
    assert client.dimensions == 384
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(vectors, embedder.embed_documents(texts), atol=1e-5)  # normalised, in order
    assert np.allclose(query, embedder.embed_query("who is his boss"), atol=1e-5)
    first = api.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["auth"] == "Bearer sk-test"
    assert first["body"] == {"model": "minilm", "input": texts}


def test_an_api_gets_texts_in_bounded_batches_and_lengths(api):
    texts = [f"memory {i} " + "x" * 5000 for i in range(BATCH_SIZE + 6)]
    assert remote(api).embed_documents(texts).shape == (len(texts), 384)
    sizes = [len(request["body"]["input"]) for request in api.requests]
    assert sizes == [BATCH_SIZE, 6]
    assert max(len(t) for r in api.requests for t in r["body"]["input"]) < 5000


def test_an_api_without_a_key_sends_no_authorization(api):
    api.key_required = False
    remote(api, key="").embed_query("hello")
    assert api.requests[0]["auth"] is None


def test_the_api_from_the_settings(api):
    with override_settings(
        SYNAPSE_EMBEDDINGS=api.base_url,
        SYNAPSE_EMBEDDINGS_MODEL="minilm",
        SYNAPSE_EMBEDDINGS_KEY="sk-test",
        SYNAPSE_EMBEDDINGS_TIMEOUT=10,
    ):
        client = get_embedder()
        assert isinstance(client, RemoteEmbedder)
        assert get_embedder() is client
        assert client.embed_query("hello").shape == (384,)
    assert isinstance(get_embedder(), e5_model.E5Embedder)


@pytest.mark.parametrize(
    ("model", "key", "says"),
    [
        ("minilm", "sk-wrong", "answered 401 Unauthorized: Incorrect API key provided."),
        ("missing", "sk-test", 'answered 404 Not Found: model "missing" not found'),
        ("broken", "sk-test", "answered 500 Internal Server Error: CUDA out of memory"),
        ("moved", "sk-test", "answered 302 Found (redirects are not followed)"),
        ("garbage", "sk-test", "did not answer with an embeddings list"),
        ("short", "sk-test", "answered 1 vectors of shape (384,) for 2 texts"),
    ],
)
def test_an_api_failure_is_a_clear_error(api, model, key, says):
    with pytest.raises(EmbeddingsError) as failed:
        remote(api, model=model, key=key).embed_documents(["one", "two"])
    assert says in str(failed.value)
    assert api.base_url + "/embeddings" in str(failed.value)
    assert [r["path"] for r in api.requests] == ["/v1/embeddings"]  # a redirect is not followed


def test_an_api_that_does_not_answer_times_out(api):
    with pytest.raises(
        EmbeddingsError, match=r"did not answer within 0\.5 s \(SYNAPSE_EMBEDDINGS_TIMEOUT"
    ):
        remote(api, model="silent", timeout=0.5).embed_documents(["hello"])
    # A search's question waits its own, shorter time.
    with pytest.raises(EmbeddingsError, match=r"within 0\.3 s \(SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT"):
        remote(api, model="silent", query_timeout=0.3).embed_query("hello")


def test_an_api_that_is_not_there_is_a_clear_error(api):
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    client = RemoteEmbedder(base_url=f"http://127.0.0.1:{port}/v1", model="minilm")
    with pytest.raises(EmbeddingsError, match="could not be reached"):
        client.embed_query("hello")
