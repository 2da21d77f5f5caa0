"""The README's webhooks section as a user follows it: its curl registers a webhook on
gunicorn started as `make run` starts it (with SYNAPSE_WEBHOOKS_ALLOW_PRIVATE=true, as the
page says), its receiver runs as printed (only the port is a free one), the worker delivers a stored
memory's event, and the receiver prints it; a forged request gets its 401."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

import pytest

from tests.reliability.harness import REPO, Client, GunicornServer, free_port
from tests.reliability.test_embedding_worker import Worker

pytestmark = pytest.mark.slow

README = (REPO / "README.md").read_text()
GUIDE = README.split("\n## Webhooks\n", 1)[1].split("\n## ", 1)[0]


def block(language: str, index: int = 0) -> str:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, re.S)[index]


def test_the_guide_registers_a_webhook_and_its_receiver_verifies_a_delivery(tmp_path):
    server = GunicornServer(
        tmp_path, env={"SYNAPSE_WEBHOOKS_ALLOW_PRIVATE": "true", "SYNAPSE_EMBEDDINGS": "off"}
    )
    key = server.create_mind()
    server.start()
    port = free_port()
    receiver_script = tmp_path / "receiver.py"
    receiver_script.write_text(block("python").replace("8099", str(port)))
    register = (
        block("sh", 0)
        .replace("http://localhost:8000", f"http://127.0.0.1:{server.port}")
        .replace("8099", str(port))
    )
    worker = Worker(server)
    receiver = None
    try:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + register],
            env={**server.env, "SYNAPSE_KEY": key},
            capture_output=True,
            text=True,
            timeout=60,
        )
        answer = json.loads(done.stdout)
        assert answer["secret"].startswith("whsec_"), done.stdout + done.stderr
        receiver = subprocess.Popen(
            [sys.executable, str(receiver_script)],
            env={**server.env, "SYNAPSE_WEBHOOK_SECRET": answer["secret"]},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        worker.start()
        client = Client(server.port, token=key)
        stored = client.request(
            "POST",
            "/memory",
            json_body={"category": "fact", "key": "office_city", "content": "Office in Munich"},
        )
        assert stored.status == 201
        assert receiver.stdout is not None
        printed: list[str] = []
        reading = threading.Thread(
            target=lambda: printed.append(receiver.stdout.readline()), daemon=True
        )
        reading.start()
        reading.join(timeout=60)
        assert printed and printed[0].split() == ["1", "memory.created", "office_city"], printed
        forged = Client(port).request(
            "POST",
            "/",
            body=b"{}",
            headers={
                "webhook-id": "msg_forged",
                "webhook-timestamp": "1",
                "webhook-signature": "v1,AAAA",
            },
        )
        assert forged.status == 401
    finally:
        if receiver is not None:
            receiver.kill()
        if worker.process is not None:
            worker.kill()
        server.stop()
