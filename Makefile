# One virtualenv, installed with the pinned constraints so every install is the same.
# Each target installs what it needs and no more: `make run` the service alone, `make
# test` the test tools and the builder, `make bench` the plots.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.test-installed
# The tests that need neither processes nor a browser nor a build: make check runs them
# (but the contract's second run, with test keys); make test runs them all in parallel.
QUICK_TESTS := not processes and not browser and not dist and not slow
BENCH_STAMP := $(VENV)/.bench-installed
# Python writes the bytecode of what it compiles (the service's modules, the tests as
# pytest rewrites their asserts) and reads it on the next run: an environment that says
# otherwise (PYTHONDONTWRITEBYTECODE=1, as some containers do) made every test process
# and every `connectapi serve` a test starts compile them all again, a sixth of `make
# check`. The files go in __pycache__, which git ignores.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: install dist client-packages client-docs run tools check test typecheck bench bench-pipeline bench-bookings bench-webhooks docs-screenshots clean

install: $(STAMP)

# The client library too: `connectapi listen` is its listener.
$(STAMP): pyproject.toml constraints.txt clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e . -e clients/python
	touch $(STAMP)

# The tests drive the Python client library too (clients/python), installed from here.
$(TEST_STAMP): $(STAMP) clients/python/pyproject.toml
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]' -e clients/python
	touch $(TEST_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[bench]'
	touch $(BENCH_STAMP)

# dist/connectapi: one executable with the interpreter, every dependency and the
# embedded PostgreSQL (packaging/connectapi.spec; docs/operations.md says how to run it).
DIST_STAMP := $(VENV)/.dist-installed

$(DIST_STAMP): $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,dist]'
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/connectapi.spec
	$(MAKE) client-packages

# The client libraries as files that install offline: clients/python/dist/ (wheel, sdist)
# and clients/typescript/connectapi-client-<version>.tgz (npm pack; no runtime dependencies).
client-packages: $(DIST_STAMP)
	$(BIN)/python -m build --outdir clients/python/dist clients/python
	cd clients/typescript && npm ci --no-audit --no-fund && npm pack

# make run PORT=9090: another port (CONNECTAPI_PORT does the same for `connectapi serve`).
# Only from make's command line: a PORT exported for something else is not taken.
run: install
	$(BIN)/connectapi serve $(if $(filter command line,$(origin PORT)),--port $(PORT))

# What tests need beyond Python, as `command:package` pairs (a command, or a file that must
# be executable): tests/browser drive Debian's chromium through Playwright (no browser
# download); tests/clients and the Postman run build the TypeScript client with Node.js and
# npm (Debian's nodejs is 18); tests/hosts build hosts of network namespaces with Debian's
# PostgreSQL 15, HAProxy and libfaketime. As root with apt-get (CI), the missing packages
# are installed in one go; elsewhere install them yourself, or the browser and hosts tests
# skip (tests/clients fail without Node.js; under CI the browser tests fail instead).
TEST_TOOLS := chromium:chromium node:nodejs npm:npm haproxy:haproxy faketime:faketime \
	/usr/lib/postgresql/15/bin/postgres:postgresql-15 ip:iproute2
test: TOOLS := $(TEST_TOOLS)
docs-screenshots: TOOLS := chromium:chromium

tools:
	@missing=""; \
	for pair in $(TOOLS); do \
		command -v "$${pair%%:*}" >/dev/null || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else \
		echo "make: missing:$$missing (apt-get install them as root); the tests that need them skip or fail" >&2; \
	fi

# The quick loop: lint, types, and the tests that need neither processes nor a browser nor
# a build (markers: pyproject.toml; tests/conftest.py marks them), the property tests
# drawing a fifth of their examples (tests/examples.py; make test draws them all).
check: $(TEST_STAMP)
	$(BIN)/ruff check connectapi tests bench docs clients/python clients/generate_models.py
	$(BIN)/python -m mypy
	$(BIN)/python -m mypy docs/architecture_svg.py clients/generate_models.py
	$(BIN)/python clients/generate_models.py --check
	CONNECTAPI_EXAMPLES=0.2 $(BIN)/python -m pytest -q -n 4 -m "$(QUICK_TESTS) and not second_mode"

# Everything, as CI runs it; each stage names its 15 slowest tests at the end.
# The whole suite: make check's tests in parallel, as it runs them; then the tests with
# processes, a browser or a build, three at a time (each file on one worker: they mostly
# wait on their processes; three at a time kept two cores 1.4 busy on average and ended
# 80 s sooner than two); then the several-hosts tests alone, since what they measure
# (seconds of errors, of takeover) is what they assert on.
test: $(DIST_STAMP) tools
	$(BIN)/ruff check connectapi tests bench docs clients/python clients/generate_models.py
	$(BIN)/python -m mypy
	$(BIN)/python -m mypy docs/architecture_svg.py clients/generate_models.py
	$(BIN)/python clients/generate_models.py --check
	$(BIN)/python -m pytest -q -n 4 --durations=15 -m "$(QUICK_TESTS)"
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --durations=15 -m "not ($(QUICK_TESTS)) and not hosts"
	$(BIN)/python -m pytest -q --durations=15 -m hosts

TYPEDOC_OPTIONS := --disableSources --hideGenerator
# docs/clients/: the client libraries' API references, generated from their code (pdoc for
# Python, TypeDoc for TypeScript); tests/clients/test_client_docs.py says when they are stale.
client-docs: $(TEST_STAMP)
	rm -rf docs/clients/python docs/clients/typescript
	$(BIN)/pdoc --no-search -o docs/clients/python connectapi_client
	cd clients/typescript && npm ci --no-audit --no-fund && \
		npx --no-install typedoc --logLevel Error $(TYPEDOC_OPTIONS) --out ../../docs/clients/typescript src/index.ts

# docs/console/*.png, shown in docs/console.md: the browser journey's screens, saved there
# only when asked (a test run writes them to a scratch directory).
docs-screenshots: $(TEST_STAMP) tools
	DOCS_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/browser/test_console_journey.py

typecheck: $(TEST_STAMP)
	$(BIN)/python -m mypy

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench

bench-pipeline: $(BENCH_STAMP)
	$(BIN)/python -m bench.pipeline

bench-bookings: $(BENCH_STAMP)
	$(BIN)/python -m bench.bookings

bench-webhooks: $(BENCH_STAMP)
	$(BIN)/python -m bench.webhooks

clean:
	rm -rf $(VENV) var dist build
