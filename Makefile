# Everything a fresh clone needs: `make run` serves, `make test` tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-from-lock

.PHONY: install run test lint format bench clean

$(STAMP): requirements.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	@touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py welcome
	@# The Procfile's web server and worker, with the venv first on PATH; honcho gives the first
	@# process PORT, so it is the one gunicorn.conf.py reads (8000 unless PORT says otherwise).
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho start --procfile Procfile --port $${PORT:-8000}

# The suite on SQLite, then again on PostgreSQL when one answers (tests/postgres_url.py says
# which, or why the second pass is skipped).
test: install
	@echo "== SQLite pass"
	DATABASE_URL=sqlite:///data/synapse.sqlite3 $(BIN)/python -m pytest
	@url=$$($(BIN)/python tests/postgres_url.py); status=$$?; \
	if [ $$status -eq 1 ]; then exit 0; elif [ $$status -ne 0 ]; then exit $$status; fi; \
	DATABASE_URL="$$url" $(BIN)/python -m pytest

# Every benchmark on a fresh database against gunicorn started as `make run` does: one table,
# each figure beside its floor and target (bench/run_all.py; docs/performance.md keeps the last).
bench: install
	$(BIN)/python bench/run_all.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache
