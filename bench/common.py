"""Helpers shared by the benchmarks: a throwaway database, fast seeding, a real server, timing.

A benchmark script typically does:

    from bench import common

    with common.BenchDatabase() as db:          # temp SQLite file, migrated, Django set up
        user, mind, key = common.create_mind("Bench")
        common.seed_memories(mind, 10_000)      # bulk_create of Memory + MemoryTag rows
        with common.Server(db, port=8710) as server:   # gunicorn as `make run` starts it
            client = server.client(token=key)
            timings = common.measure(lambda: client.get("/health"), requests=200)
            print(common.format_table([common.Figure("GET /health", timings)]))

Everything stays on the loopback interface; loops are bounded; nothing is asserted.

PostgreSQL: `BenchDatabase(database="postgres")` creates a throwaway database on the server of
BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) and drops it on
exit. A script taking `--database sqlite,postgres` runs itself once per database (Django is
set up once per process) through `run_per_database`, then prints the figures side by side.
"""

from __future__ import annotations

import http.client
import json as jsonlib
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"

RANKS = [0, 1, 2, 3]  # low, normal, high, critical
CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
_WORD_TEXT = """
deploy server docker python django sqlite postgres cache redis queue worker invoice customer
meeting budget report release branch review test coverage latency memory search index token
prompt agent schedule travel family coffee music garden bicycle kitchen recipe holiday weather
insurance contract lawyer doctor appointment birthday password backup migration schema endpoint
feature bug incident monitoring alert dashboard quarterly roadmap hiring onboarding vacation
preference editor keyboard
"""
_TAG_TEXT = """
work home infra python docker db health travel family finance music tools urgent client
project-x project-y reading ideas
"""
WORDS = _WORD_TEXT.split()
TAGS = _TAG_TEXT.split()


# --- Database and Django -----------------------------------------------------------------------


DATABASES = ("sqlite", "postgres")
POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def _postgres_admin(url: str):
    """An autocommit connection to the server of `url` (CREATE/DROP DATABASE need one)."""
    import dj_database_url
    import psycopg

    db = dj_database_url.parse(url)
    return psycopg.connect(
        dbname=db["NAME"] or "postgres",
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        autocommit=True,
    )


class BenchDatabase:
    """A fresh database, migrated, with Django set up in-process.

    `database="sqlite"`: a file in a temp directory; `"postgres"`: a new database
    synapse_bench_<random> on the server of BENCH_POSTGRES_URL, dropped on exit.
    Environment for this process (and for a `Server` started from it): DATABASE_URL pointing
    at it, a long random SECRET_KEY, SYNAPSE_DATA_DIR inside the temp directory, the rate
    limit off, quotas per mind far above what a benchmark stores. The directory (and the
    PostgreSQL database) is removed on exit unless `keep=True`.
    """

    def __init__(self, *, keep: bool = False, verbose: bool = False, database: str = "sqlite"):
        if database not in DATABASES:
            raise ValueError(f"database must be one of {DATABASES}, not {database!r}")
        self.keep = keep
        self.verbose = verbose
        self.database = database
        self.dir = Path(tempfile.mkdtemp(prefix="synapse-bench-"))
        self.path = self.dir / "bench.sqlite3"
        self.postgres_name = None
        url = f"sqlite:///{self.path}"  # an absolute path: sqlite:////tmp/…
        if database == "postgres":
            from urllib.parse import urlsplit

            self.path = None
            self.postgres_name = f"synapse_bench_{secrets.token_hex(4)}"
            url = urlsplit(POSTGRES_URL)._replace(path="/" + self.postgres_name).geturl()
        self.url = url
        self.env = {
            "DATABASE_URL": url,
            "SECRET_KEY": secrets.token_urlsafe(64),
            "SYNAPSE_DATA_DIR": str(self.dir),
            "SYNAPSE_RATE_LIMIT": "off",
            # Quotas far above what a benchmark stores: checked on every write, never reached.
            "SYNAPSE_MAX_MEMORIES_PER_MIND": str(10**9),
            "SYNAPSE_MAX_MIND_BYTES": str(10**15),
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
        }

    def __enter__(self) -> BenchDatabase:
        if self.postgres_name:
            with _postgres_admin(POSTGRES_URL) as admin:
                admin.execute(f'CREATE DATABASE "{self.postgres_name}"')
        os.environ.update(self.env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synapse_site.settings")
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        import django

        django.setup()
        from django.core.management import call_command

        started = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        self.log(f"migrated {self.path or self.url} in {time.perf_counter() - started:.1f}s")
        return self

    def __exit__(self, *exc) -> None:
        from django.db import connections

        connections.close_all()
        if self.keep:
            print(f"kept {self.dir}" + (f" and {self.url}" if self.postgres_name else ""))
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.postgres_name:
            with _postgres_admin(POSTGRES_URL) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{self.postgres_name}" WITH (FORCE)')

    def settle(self) -> None:
        """Measure a steady state, not the moment after a bulk load: fold SQLite's WAL into
        the file; on PostgreSQL, VACUUM ANALYZE (visibility map, planner statistics)."""
        from django.db import connection

        with connection.cursor() as cursor:
            if self.database == "sqlite":
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            else:
                cursor.execute("VACUUM ANALYZE")

    def log(self, message: str) -> None:
        if self.verbose:
            print(message, file=sys.stderr)


def cpu() -> str:
    """The CPU, its flags that the models' integer products depend on, and the cores: printed
    above every figure, since the same code runs at another speed on another CPU."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in info.splitlines() if "model name" in ln), ""
    )
    flags = next(
        (ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), []
    )
    wanted = [f for f in flags if f in {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"}]
    shown = " ".join(wanted) or "(none of avx2/avx512/vnni)"
    return (
        f"CPU {model or 'unknown'}; flags {shown}; "
        f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))})"
    )


def create_mind(name: str, *, email: str | None = None):
    """A new user with one mind: (user, mind, raw Mind Key)."""
    from accounts.models import User
    from minds.services import mind_create

    email = email or f"bench-{secrets.token_hex(4)}@example.com"
    user = User.objects.create_user(email=email, password=secrets.token_urlsafe(16))
    mind, key = mind_create(owner=user, name=name)
    return user, mind, key


def wait_for_first_vector(worker: subprocess.Popen, mind, log: Path) -> None:
    """Until a memory stored now in `mind` has its vector: the worker runs and has its model
    loaded. The end of the worker's `log` in the error when it does not."""
    from memories.actors import Actor
    from memories.models import MemoryVector
    from memories.services import memory_upsert

    memory = memory_upsert(
        mind=mind, actor=Actor.system(), category="note", key="warm_up", content="warm up"
    ).memory
    deadline = time.monotonic() + 120
    while not MemoryVector.objects.filter(memory_id=memory.pk).exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the worker did not embed a first memory:\n{tail}")
        time.sleep(0.05)


def jwt_for(user) -> str:
    from rest_framework_simplejwt.tokens import RefreshToken

    return str(RefreshToken.for_user(user).access_token)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def default_content(rng: random.Random, index: int) -> str:
    """Two to five sentences, now and then on several lines (about 100 to 600 characters)."""
    parts = [sentence(rng, rng.randint(6, 18)) for _ in range(rng.randint(2, 5))]
    return ("\n" if index % 7 == 0 else " ").join(parts)


def seed_memories(
    mind,
    count: int,
    *,
    seed: int = 1,
    content: Callable[[random.Random, int], str] = default_content,
    priority_weights: Sequence[float] = (30, 55, 14.9, 0.1),
    tags_per_memory: tuple[int, int] = (0, 3),
    expired_share: float = 0.02,
    verified_share: float = 0.3,
    batch_size: int = 1000,
) -> int:
    """`count` memories for `mind`, written with bulk_create (and their MemoryTag rows and
    spans, as for memories stored before: memories/spans.py).

    Deterministic for a given `seed`. Keys are `<category>_<index>`; priorities are drawn
    with `priority_weights` for low, normal, high, critical (by default about 0.1% critical,
    so a budget has room beyond them); updated_at spreads over the last year; a share expired.
    Returns the number of rows written.
    """
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from memories import rows, spans
    from memories.models import Memory, MemorySpan, MemoryTag

    rng = random.Random(seed)
    now = timezone.now()
    written = 0
    for start in range(0, count, batch_size):
        memories = []
        for i in range(start, min(start + batch_size, count)):
            category = CATEGORIES[i % len(CATEGORIES)]
            updated = now - timedelta(seconds=rng.randint(60, 365 * 24 * 3600))
            tags = sorted(set(rng.sample(TAGS, rng.randint(*tags_per_memory))))
            expired = rng.random() < expired_share
            memories.append(
                Memory(
                    mind=mind,
                    category=category,
                    key=f"{category}_{i:06d}",
                    content=content(rng, i),
                    tags=tags,
                    priority=rng.choices(RANKS, weights=priority_weights)[0],
                    source="agent",
                    verified=rng.random() < verified_share,
                    created_at=updated,
                    updated_at=updated,
                    expires_at=now - timedelta(days=1) if expired else None,
                )
            )
        with transaction.atomic():
            Memory.objects.bulk_create(memories)
            MemoryTag.objects.bulk_create(
                MemoryTag(memory=m, mind=mind, tag=tag) for m in memories for tag in m.tags
            )
            values = ({name: getattr(m, name) for name in spans.SPANNED} for m in memories)
            opened = (
                spans.span_row(m.pk, mind.pk, v, start=m.created_at, end=None)
                for m, v in zip(memories, values, strict=True)
            )
            rows.insert(MemorySpan, list(opened))
        written += len(memories)
    return written


# --- The server --------------------------------------------------------------------------------


class Server:
    """gunicorn started like `make run` does (gunicorn.conf.py; HOST, PORT, WEB_CONCURRENCY
    from the environment), on the benchmark database. Stopped with SIGTERM on exit."""

    def __init__(
        self,
        db: BenchDatabase,
        *,
        port: int = 8710,
        host: str = "127.0.0.1",
        workers: int = 2,
        startup_timeout: float = 30.0,
    ):
        self.db = db
        self.host = host
        self.port = port
        self.workers = workers
        self.startup_timeout = startup_timeout
        self.log_path = db.dir / f"gunicorn-{port}.log"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        env = {
            **os.environ,
            **self.db.env,
            "HOST": self.host,
            "PORT": str(self.port),
            "WEB_CONCURRENCY": str(self.workers),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)  # wsgi.py sets its own default
        self._log = open(self.log_path, "wb")  # closed in __exit__
        self.process = subprocess.Popen(
            [str(VENV_BIN / "gunicorn"), "--config", "gunicorn.conf.py", "synapse_site.wsgi"],
            cwd=REPO,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._wait_until_healthy()
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited early; see {self.log_path}:\n{self.tail()}")
            try:
                if self.client().get("/health").status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"/health did not answer within {self.startup_timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)  # gunicorn: graceful shutdown
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._log.close()

    def client(self, *, token: str | None = None) -> HttpClient:
        return HttpClient(self.host, self.port, token=token)


@dataclass
class Reply:
    status: int
    body: bytes
    seconds: float
    headers: list[tuple[str, str]] = field(default_factory=list)

    def json(self):
        return jsonlib.loads(self.body)


class HttpClient:
    """A small keep-alive client (reconnects by itself when the server closes)."""

    def __init__(self, host: str, port: int, *, token: str | None = None):
        self.conn = http.client.HTTPConnection(host, port, timeout=30)
        self.headers = {"Accept": "*/*"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, *, json=None, headers: dict | None = None) -> Reply:
        body = None
        all_headers = {**self.headers, **(headers or {})}
        if json is not None:
            body = jsonlib.dumps(json).encode()
            all_headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=body, headers=all_headers)
            response = self.conn.getresponse()
            data = response.read()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.conn.close()  # a closed keep-alive connection: retry once on a fresh one
            started = time.perf_counter()
            self.conn.request(method, path, body=body, headers=all_headers)
            response = self.conn.getresponse()
            data = response.read()
        return Reply(response.status, data, time.perf_counter() - started, response.getheaders())

    def get(self, path: str, **kw) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw) -> Reply:
        return self.request("POST", path, **kw)


# --- Timing and the table ----------------------------------------------------------------------


def measure(call: Callable[[], Reply], *, requests: int = 200, warmup: int = 10) -> list[float]:
    """Seconds per call for `requests` calls after `warmup` untimed ones.

    Raises if any answer is not 2xx: a benchmark of errors measures nothing.
    """
    for _ in range(warmup):
        _check(call())
    timings = []
    for _ in range(requests):
        reply = _check(call())
        timings.append(reply.seconds)
    return timings


def _check(reply: Reply) -> Reply:
    if not 200 <= reply.status < 300:
        raise RuntimeError(f"HTTP {reply.status}: {reply.body[:300]!r}")
    return reply


def percentile(values: Iterable[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, round(pct / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Figure:
    name: str
    timings: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def p50_ms(self) -> float:
        return percentile(self.timings, 50) * 1000

    @property
    def p95_ms(self) -> float:
        return percentile(self.timings, 95) * 1000


def format_table(figures: Sequence[Figure], *, baseline: Figure | None = None) -> str:
    """A fixed-width table: requests, p50, p95 and p50 as a multiple of the baseline's p50."""
    base = baseline.p50_ms if baseline and baseline.timings else None
    width = max(len(f.name) for f in figures)
    head = f"{'':{width}}  {'n':>5}  {'p50 ms':>8}  {'p95 ms':>8}  {'p50 / base':>10}"
    lines = [head, "-" * len(head)]
    for f in figures:
        if not f.timings:
            lines.append(f"{f.name:{width}}  {'-':>5}  {f.note}")
            continue
        ratio = f"{f.p50_ms / base:9.1f}x" if base else ""
        line = f"{f.name:{width}}  {len(f.timings):>5}  {f.p50_ms:8.2f}  {f.p95_ms:8.2f}"
        lines.append(f"{line}  {ratio:>10}" + (f"  {f.note}" if f.note else ""))
    return "\n".join(lines)


# --- Several databases in one run --------------------------------------------------------------


def database_list(value: str) -> list[str]:
    """argparse type for `--database`: `sqlite`, `postgres` or both, comma-separated."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in DATABASES]
    if not names or unknown:
        raise ValueError(f"--database takes {', '.join(DATABASES)} (comma-separated)")
    return names


def write_results(path: str | None, rows: list[dict]) -> None:
    """For `run_per_database`: this run's figures, [{"name": str, <metric>: number…}]."""
    if path:
        Path(path).write_text(jsonlib.dumps(rows))


def run_per_database(script: str, argv: Sequence[str], databases: Sequence[str]) -> dict:
    """Run `script` once per database (`--database X --results file`), its output shown as
    it goes; return {database: rows} for `format_side_by_side`."""
    results = {}
    for database in databases:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            print(f"\n===== {database} =====", flush=True)
            command = [sys.executable, script, *argv, "--database", database, "--results"]
            subprocess.run([*command, out.name], check=True)
            results[database] = jsonlib.loads(Path(out.name).read_text() or "[]")
    return results


def per_database(
    script: str,
    argv: Sequence[str] | None,
    databases: Sequence[str],
    *,
    heading: str = "ms",
    metrics: Sequence[str] = ("p50", "p95"),
) -> bool:
    """When `--database` names several: run `script` once per database with the rest of its
    arguments (`argv`, or the command line's), print the figures side by side under `heading`,
    and return True; False when it names one (the caller runs it)."""
    if len(databases) < 2:
        return False
    given = list(sys.argv[1:] if argv is None else argv)
    rest = []
    while given:
        arg = given.pop(0)
        if arg == "--database":
            given.pop(0)
        elif not arg.startswith("--database="):
            rest.append(arg)
    results = run_per_database(script, rest, databases)
    print(f"\n{heading}")
    print(format_side_by_side(results, metrics))
    return True


def format_side_by_side(results: dict, metrics: Sequence[str]) -> str:
    """One line per figure name; under each metric, one column per database, in run order."""
    databases = list(results)
    names: list[str] = []
    for rows in results.values():
        names += [row["name"] for row in rows if row["name"] not in names]
    by = {db: {row["name"]: row for row in rows} for db, rows in results.items()}
    width = max(len(name) for name in names)
    cell = max(9, *(len(db) for db in databases))
    group = len(databases) * (cell + 2) - 2
    top = f"{'':{width}}  " + "  ".join(f"{metric:^{group}}" for metric in metrics)
    head = f"{'':{width}}  " + "  ".join(
        "  ".join(f"{db:>{cell}}" for db in databases) for _ in metrics
    )
    lines = [top, head, "-" * len(head)]
    for name in names:
        values = []
        for metric in metrics:
            for db in databases:
                value = by[db].get(name, {}).get(metric)
                if value is None:
                    values.append(f"{'-':>{cell}}")
                elif isinstance(value, int):
                    values.append(f"{value:>{cell},.0f}")
                else:
                    values.append(f"{value:>{cell},.2f}")
        lines.append(f"{name:{width}}  " + "  ".join(values))
    return "\n".join(lines)
