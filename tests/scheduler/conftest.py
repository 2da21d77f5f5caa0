from __future__ import annotations

import socket

import pytest


@pytest.fixture
def no_network(monkeypatch):
    """A refusal must be decided without a connection or a lookup."""

    def refuse(*args, **kwargs):
        raise AssertionError("the server tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
