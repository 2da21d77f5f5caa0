"""Crash safety: a write the server acknowledged survives SIGKILL of the whole server.

gunicorn runs as `make run` runs it (gunicorn.conf.py, 2 workers) on a SQLite file. Four
writer threads store and update memories as fast as they can; mid-write, the master and its
workers are killed with SIGKILL (no shutdown, no flush, no atexit). After each round:

- SQLite's `PRAGMA integrity_check` and the search index check (`search_index --check`:
  FTS5 integrity-check, index equal to a fresh build) pass on the crashed file;
- the restarted server has every acknowledged write, with its acknowledged content (or the
  content of the one request per writer that was in flight at the kill: it may have
  committed without its answer getting out), and nothing no one asked for;
- `GET /memory/search` finds acknowledged writes by their unique word.

PRAGMA synchronous=NORMAL in WAL mode is durable against this (a process crash): a commit
is in the OS's page cache when the client gets its answer. It is not against power loss or a
kernel crash, where the last commits may be rolled back; SYNAPSE_SQLITE_SYNCHRONOUS=FULL
covers that (docs/operations.md).
"""

from __future__ import annotations

import http.client
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field

import pytest

from tests.reliability.harness import Client, GunicornServer

pytestmark = pytest.mark.slow

ROUNDS = 3
WRITERS = 4
# Kill once this many writes were acknowledged in the round (plus a random few ms), so the
# kill lands in the middle of a stream of writes, not before the first or after the last.
ACKS_BEFORE_KILL = 120


@dataclass
class Writer:
    """One thread's writes: what the server acknowledged, and what was in flight."""

    number: int
    acked: dict[str, str] = field(default_factory=dict)  # key -> acknowledged content
    acked_ids: dict[str, str] = field(default_factory=dict)  # key -> memory id
    in_flight: tuple[str, str] | None = None
    refused: list[tuple[int, bytes]] = field(default_factory=list)
    writes: int = 0


def token(writer: int, round_: int, n: int) -> str:
    # One word the search tokenizer keeps whole (letters then digits) and stems to itself.
    return f"crashword{writer}r{round_}n{n}"


def write_until_killed(
    writer: Writer, port: int, key: str, round_: int, stop: threading.Event, acks: list
) -> None:
    client = Client(port, token=key, timeout=10)
    rng = random.Random(writer.number * 1000 + round_)
    n = 0
    try:
        while not stop.is_set():
            n += 1
            own = list(writer.acked)
            # Every fourth write updates an earlier memory (its content changes).
            update = bool(own) and n % 4 == 0
            mkey = rng.choice(own) if update else f"w{writer.number}_r{round_}_{n}"
            word = token(writer.number, round_, n)
            content = f"Round {round_} writer {writer.number} write {n}: {word}"
            writer.in_flight = (mkey, content)
            reply = client.request(
                "POST",
                "/memory",
                json_body={"category": "fact", "key": mkey, "content": content, "tags": ["crash"]},
            )
            writer.writes += 1
            if 200 <= reply.status < 300:
                writer.acked[mkey] = content
                writer.acked_ids[mkey] = reply.json()["id"]
                acks.append(1)
            else:
                writer.refused.append((reply.status, reply.body[:300]))
            writer.in_flight = None
    except (OSError, http.client.HTTPException):
        return  # the server is gone; `in_flight` (if set) may or may not have committed
    finally:
        client.close()


def settle_in_flight(writers: list[Writer], stored: dict[str, dict]) -> None:
    """A write in flight at the kill that did commit is, from now on, what must be there."""
    for writer in writers:
        if writer.in_flight is None:
            continue
        mkey, content = writer.in_flight
        if mkey in stored and stored[mkey]["content"] == content:
            writer.acked[mkey] = content
            writer.acked_ids[mkey] = stored[mkey]["id"]
        writer.in_flight = None


def all_memories(client: Client) -> dict[str, dict]:
    stored: dict[str, dict] = {}
    offset = 0
    while True:
        reply = client.request("GET", f"/memory?limit=1000&offset={offset}")
        assert reply.status == 200, reply.body[:300]
        page = reply.json()
        stored.update({m["key"]: m for m in page["memories"]})
        offset += len(page["memories"])
        if not page["memories"] or offset >= page["total"]:
            return stored


def check_database_file(server: GunicornServer) -> None:
    conn = sqlite3.connect(server.db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
    result = server.manage("search_index", "--check", check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_acknowledged_writes_survive_sigkill_of_the_whole_server(tmp_path):
    server = GunicornServer(tmp_path)
    key = server.create_mind()
    writers = [Writer(number) for number in range(WRITERS)]
    rng = random.Random(9)
    try:
        for round_ in range(1, ROUNDS + 1):
            server.start()
            stop = threading.Event()
            acks: list[int] = []
            threads = [
                threading.Thread(
                    target=write_until_killed, args=(w, server.port, key, round_, stop, acks)
                )
                for w in writers
            ]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 20
            while len(acks) < ACKS_BEFORE_KILL and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.05))
            server.kill()
            stop.set()
            for thread in threads:
                thread.join(timeout=15)
            assert len(acks) >= ACKS_BEFORE_KILL, server.tail()
            for writer in writers:
                assert writer.refused == [], writer.refused[:3]

            check_database_file(server)
            server.start()
            client = server.client(token=key)
            stored = all_memories(client)
            expected_keys: set[str] = set()
            for writer in writers:
                expected_keys |= set(writer.acked)
                for mkey, content in writer.acked.items():
                    assert mkey in stored, f"acknowledged {mkey} is lost"
                    memory = stored[mkey]
                    assert memory["id"] == writer.acked_ids[mkey]
                    allowed = {content}
                    if writer.in_flight and writer.in_flight[0] == mkey:
                        allowed.add(writer.in_flight[1])
                    assert memory["content"] in allowed, (mkey, memory["content"], allowed)
            in_flight_keys = {w.in_flight[0] for w in writers if w.in_flight}
            assert set(stored) - expected_keys <= in_flight_keys
            # The kill hit writes in flight (else this round tested a quiet server).
            assert in_flight_keys, "no write was in flight at the kill"
            settle_in_flight(writers, stored)

            # Searchable: the last writes of each writer (the ones a crash would hit) and a
            # random sample of the rest. search_index --check above showed the index equals
            # a fresh build, so what holds for these holds for all.
            sample: set[str] = set()
            for writer in writers:
                sample |= set(list(writer.acked)[-5:])
            everything = sorted(expected_keys)
            sample |= set(rng.sample(everything, min(20, len(everything))))
            for mkey in sorted(sample):
                memory = stored[mkey]
                word = memory["content"].rsplit(" ", 1)[1]
                reply = client.request("GET", f"/memory/search?q={word}")
                assert reply.status == 200, reply.body[:300]
                assert [r["id"] for r in reply.json()["results"]] == [memory["id"]], word
            client.close()
            server.stop()
    finally:
        server.kill()
    total = sum(len(w.acked) for w in writers)
    assert total >= ROUNDS * ACKS_BEFORE_KILL * 0.75  # updates reuse keys
