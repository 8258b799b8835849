# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv on first use
# and reuses it after; the stamp is rebuilt only when pyproject.toml changes.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-optimised bench crash load lint format docs clean

# The install speaks in a few lines of its own; pip's output goes to .venv/install.log, shown
# only when the install fails.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "svc-console: creating .venv (first run only)"; \
		$(PYTHON) -m venv $(VENV); }
	@echo "svc-console: installing packages into .venv (a minute or two the first time)"
	@{ $(BIN)/python -m pip install --quiet --upgrade pip \
		&& $(BIN)/python -m pip install --quiet -e '.[dev]'; } > $(VENV)/install.log 2>&1 \
		|| { tail -n 30 $(VENV)/install.log; echo "svc-console: install failed; the whole log is .venv/install.log"; exit 1; }
	@touch $(STAMP)
	@echo "svc-console: ready"

demo: $(STAMP)
	@$(BIN)/svc-console demo

# The suite on one worker a core (pytest-xdist; WORKERS=n to choose), TESTS=path for a part of
# it. --dist worksteal: the tests' lengths differ by a thousandfold (a crash or load run takes
# minutes, most take a tenth of a second), so a fixed share per worker ends with one still busy;
# a worker whose queue runs out takes half of the other's instead. The tests start svc-console
# in hundreds of processes of their own (the command line, brokers, agents): its modules are
# compiled once into __pycache__ for all of them, also where the environment says not to write
# bytecode (PYTHONDONTWRITEBYTECODE). docs/development.md has what it saves.
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n $(or $(WORKERS),auto) --dist worksteal $(TESTS)

# The broker, policy and ledger tests under `python -O`, which drops every assert of the package:
# no check that input can fail may be one (the tests' own asserts are pytest's, kept).
test-optimised: $(STAMP)
	$(BIN)/python -O -m pytest -q tests/broker tests/policy tests/ledger

# Every performance target beside its baseline (tests/bench/run.py): RUNS=N repeats, ONLY=a,b
# picks benchmarks, PROFILE=decision profiles one of them instead. The PostgreSQL rows
# (ONLY=postgres) start their own throwaway cluster, skipped where none is installed;
# BENCH_PG_BROKERS=1,2,4 sets how many brokers share its ledger.
BENCH_ARGS = $(if $(RUNS),--runs $(RUNS)) $(if $(ONLY),--only $(ONLY)) $(if $(PROFILE),--profile $(PROFILE))
bench: $(STAMP)
	$(BIN)/python tests/bench/run.py $(strip $(BENCH_ARGS))

# The crash test in full (tests/crash_harness.py): CRASH_RUNS kills and restarts of the broker
# (default 1,000), seeded by CRASH_SEED; prints the counts and any violation.
crash: $(STAMP)
	$(BIN)/python tests/crash_harness.py $(if $(CRASH_RUNS),--runs $(CRASH_RUNS)) $(if $(CRASH_SEED),--seed $(CRASH_SEED))

# The load test for a minute (LOAD_SECONDS to change it): 200 agents; prints the figures.
load: $(STAMP)
	LOAD_SECONDS=$(or $(LOAD_SECONDS),60) $(BIN)/python -m pytest -q -s tests/e2e/test_load.py -k two_hundred

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# The guide (docs/, MkDocs): the pages written from the code (the command-line and SKILLS.md
# references) and its pictures (drawn by the console from a scripted demo state) written afresh,
# then built into build/site with every warning an error. Nothing is fetched from the network.
docs: $(STAMP)
	$(BIN)/python docs/tools/build.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info
