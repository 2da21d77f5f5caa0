"""The README's scheduler section as a user follows it: its curl commands run as printed on
gunicorn started as `make run` starts it, and make the job and the variable they say."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.reliability.harness import REPO, GunicornServer

pytestmark = pytest.mark.slow

README = (REPO / "README.md").read_text()
GUIDE = README.split("\n## Scheduler\n", 1)[1].split("\n## ", 1)[0]


def test_the_guide_makes_a_job_and_a_variable(tmp_path):
    server = GunicornServer(tmp_path, env={"SYNAPSE_EMBEDDINGS": "off"})
    key = server.create_mind()
    server.start()
    try:
        script = re.findall(r"```sh\n(.*?)```", GUIDE, re.S)[0].replace(
            "http://localhost:8000", f"http://127.0.0.1:{server.port}"
        )
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + script.replace("curl -s", "curl -sf")],
            env={**server.env, "SYNAPSE_KEY": key},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        answers = [json.loads(line) for line in done.stdout.replace("}{", "}\n{").splitlines()]
        created, listed, variable, read = answers
        assert created["id"].startswith("cron_") and created["method"] == "POST"
        assert created["timezone"] == "Europe/Berlin" and created["next_run_at"]
        assert listed["total"] == 1
        assert variable["key"] == read["key"] == "last_report"
        assert read["value"] == "2026-12-01"
    finally:
        server.stop()
