"""The default cache (synapse_site/cache.py): one count for every worker process of a machine.

`make run` starts several gunicorn workers; a rate limit of 10/min must be 10 for all of them
together, without Redis. Each worker is its own process, so these tests use processes too.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synapse_site.cache import SharedFileCache

ROOT = Path(__file__).resolve().parents[2]


def django_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "CACHE_URL"}}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        # Given, not generated: processes starting at once on a new data dir would race for it.
        SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_SETTINGS_MODULE="synapse_site.settings",
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        **extra,
    )
    return env


def run(script: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "import django; django.setup()\n" + script],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def output(process: subprocess.Popen[str]) -> object:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


# A worker answering refresh attempts (refused before any database work; each one counted).
REFRESHES = """
import json
from django.test import Client
client = Client(HTTP_HOST="localhost")
statuses = [
    client.post("/token/refresh", {"refresh": "x.y.z"}, content_type="application/json").status_code
    for _ in range(6)
]
print(json.dumps(statuses))
"""


@pytest.mark.slow
def test_two_worker_processes_share_one_login_limit(tmp_path):
    env = django_env(tmp_path, SYNAPSE_LOGIN_RATE_LIMIT="10/min")
    first = output(run(REFRESHES, env))
    second = output(run(REFRESHES, env))
    # With a count per process (local memory) the second would get six 401s again.
    assert first == [401] * 6
    assert second == [401] * 4 + [429] * 2


INCREMENTS = """
import json
from django.core.cache import cache
cache.add("race", 0, 300)
for _ in range(250):
    cache.incr("race")
print(json.dumps(cache.get("race")))
"""


@pytest.mark.slow
def test_racing_processes_lose_no_count(tmp_path):
    env = django_env(tmp_path)
    processes = [run(INCREMENTS, env) for _ in range(4)]
    finals = [output(process) for process in processes]
    assert max(finals) == 1000  # a read-then-write increment loses some when processes race


def test_an_increment_keeps_the_window_it_started(tmp_path, monkeypatch):
    cache = SharedFileCache(str(tmp_path / "cache"), {})
    assert cache.add("hits", 0, 60)
    assert not cache.add("hits", 0, 60)  # add() starts a window only once

    def expiry() -> float:
        with open(cache._key_to_file("hits"), "rb") as f:
            return pickle.load(f)

    started = expiry()
    assert [cache.incr("hits") for _ in range(3)] == [1, 2, 3]
    assert expiry() == started  # Django's incr() would push it to the default timeout
    assert cache.get("hits") == 3
    monkeypatch.setattr("synapse_site.cache.time.time", lambda: started + 1)
    with pytest.raises(ValueError):
        cache.incr("hits")  # the window is over: the throttle starts a new one


def test_a_full_cache_drops_expired_entries_first(tmp_path, monkeypatch):
    cache = SharedFileCache(str(tmp_path / "cache"), {"OPTIONS": {"MAX_ENTRIES": 4}})
    for n in range(3):
        cache.set(f"old{n}", n, 1)
    cache.set("live", "kept", 600)
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 5)  # the old ones have expired
    cache.set("new", "x", 600)
    assert cache.get("live") == "kept" and cache.get("new") == "x"
    assert len(list((tmp_path / "cache").glob("*.djcache"))) == 2


SETTINGS = """
import json
from django.conf import settings
from django.core.cache import cache
cache.add("probe", 1)
print(json.dumps(settings.CACHES["default"]))
"""


def test_the_default_cache_is_files_in_the_data_dir_for_the_owner_only(tmp_path):
    config = output(run(SETTINGS, django_env(tmp_path)))
    assert config["BACKEND"] == "synapse_site.cache.SharedFileCache"
    assert config["LOCATION"] == str(tmp_path / "cache")
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "cache" / "lock").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        ("locmem://", "django.core.cache.backends.locmem.LocMemCache"),
        ("redis://127.0.0.1:6379/0", "django.core.cache.backends.redis.RedisCache"),
    ],
)
def test_cache_url_still_picks_another_cache(tmp_path, url, backend):
    script = "import json; from django.conf import settings; "
    script += "print(json.dumps(settings.CACHES['default']))"
    config = output(run(script, django_env(tmp_path, CACHE_URL=url)))
    assert config["BACKEND"] == backend


def test_cache_url_can_name_a_directory(tmp_path):
    script = "import json; from django.conf import settings; "
    script += "print(json.dumps(settings.CACHES['default']))"
    where = tmp_path / "elsewhere"
    config = output(run(script, django_env(tmp_path, CACHE_URL=f"file://{where}")))
    assert config["LOCATION"] == str(where)
