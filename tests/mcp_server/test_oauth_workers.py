"""Disconnecting an app holds on every gunicorn worker from the very next call: the token's
connection is read from the database on each call, never kept by a worker."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.security.test_sharing_matrix import assert_both_workers, on_each_worker, two_workers

pytestmark = pytest.mark.slow

CONNECT = """
from datetime import timedelta
from django.utils import timezone
from oauth2_provider.models import AccessToken
from accounts.models import User
from minds.services import mind_create
from tests.factories import connection_make
person = User.objects.create_user(email="person@example.com", password="a long password here")
mind, _ = mind_create(owner=person, name="Connected")
connection = connection_make(mind, person, resource="{resource}")
AccessToken.objects.create(
    user=person, application=connection.application, token="{token}", scope="mcp",
    expires=timezone.now() + timedelta(hours=1), resource=["{resource}"],
)
"""
DISCONNECT = """
from connections.models import Connection
from connections.services import disconnect
disconnect(connection=Connection.objects.get())
"""
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_a_disconnect_holds_on_every_worker_from_the_next_call(tmp_path):
    with two_workers(tmp_path) as server:
        # The app's token is for this server's /mcp, as the port it got names it.
        token = secrets.token_urlsafe(30)
        resource = f"http://127.0.0.1:{server.port}/mcp"
        server.manage("shell", "-c", CONNECT.format(token=token, resource=resource))

        def calls(expected: int):
            def call_all():
                client = server.client(token=token)
                try:
                    for _ in range(5):
                        reply = client.request("POST", "/mcp", json_body=TOOLS_LIST)
                        assert reply.status == expected, reply.body
                finally:
                    client.close()

            return call_all

        assert_both_workers(on_each_worker(server, calls(200)))
        server.manage("shell", "-c", DISCONNECT)
        assert_both_workers(on_each_worker(server, calls(401)))
        refused = server.client(token=token).request("POST", "/mcp", json_body=TOOLS_LIST)
        assert "not valid" in json.loads(refused.body)["error"]["message"]
