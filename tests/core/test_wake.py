"""core/wake.py: a burst of wakes is one call, from a thread of its own."""

from __future__ import annotations

import os
import threading

from core.wake import Waker


def test_a_burst_of_wakes_is_one_call_and_one_more_after_a_wake_inside_it(monkeypatch):
    calls: list[int] = []
    waker = Waker(lambda: calls.append(1), name="test-waker", interval=0)
    monkeypatch.setattr(waker, "_ensure_thread", lambda: None)  # served by hand below
    for _ in range(5):
        waker.wake()
    assert calls == []  # the caller never calls it itself
    waker.serve_once()
    assert calls == [1]
    waker.wake()  # a wake during the interval: one more call after it
    waker.serve_once()
    assert calls == [1, 1]


def test_the_thread_calls(monkeypatch):
    called = threading.Event()
    waker = Waker(called.set, name="test-waker", interval=0)
    waker.wake()
    assert called.wait(timeout=30)
    assert waker._pid == os.getpid()


def test_immediate_calls_at_once():
    calls: list[int] = []
    Waker(lambda: calls.append(1), name="t", interval=0, immediate=lambda: True).wake()
    assert calls == [1]


def test_a_failing_call_is_logged_not_raised(caplog, monkeypatch):
    def down() -> None:
        raise ConnectionError("queue down")

    waker = Waker(down, name="test-waker", interval=0)
    monkeypatch.setattr(waker, "_ensure_thread", lambda: None)
    waker.wake()
    waker.serve_once()
    assert "Could not wake the worker (test-waker)" in caplog.text
