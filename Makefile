# One virtualenv, installed with the pinned constraints so every install is the same.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install dist run test typecheck bench bench-pipeline bench-bookings bench-webhooks clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

# dist/connectapi: one executable with the interpreter, every dependency and the
# embedded PostgreSQL (packaging/connectapi.spec; docs/operations.md says how to run it).
DIST_STAMP := $(VENV)/.dist-installed

$(DIST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,dist]'
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
		packaging/connectapi.spec

run: install
	$(BIN)/connectapi serve

test: $(DIST_STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

typecheck: install
	$(BIN)/python -m mypy

bench: install
	$(BIN)/python -m bench

bench-pipeline: install
	$(BIN)/python -m bench.pipeline

bench-bookings: install
	$(BIN)/python -m bench.bookings

bench-webhooks: install
	$(BIN)/python -m bench.webhooks

clean:
	rm -rf $(VENV) var dist build
