"""schemathesis against the live service and its own OpenAPI document, with a real key.

No answer may be a 5xx, every status must be one the document lists for the route, and
every answer must match the document's schema for it (the envelope included). The seed is
fixed so that CI is repeatable; change it to look elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from connectapi.http.public.openapi import OPENAPI_PATH

from .live import service_with_key

SEED = "20261122"


# With a test key too: the test helpers (404 for a live key) are reached for real. The
# other routes answer a test key as they answer a live one with the same schemas (the
# contract's API tests run again with test keys: `second_mode`), so the test run fuzzes the
# helpers alone, and CI stays under its 30 minutes.
ONLY_IN_TEST_MODE = ("--include-path-regex", "/test-helpers/")
SELECTED = {"live": "Selected: 21/22", "test": "Selected: 6/22"}
# Per operation, from a fixed seed (the same examples every run): 60 rather than 100 keeps
# CI under its 30 minutes (the live run took 140 s at 100).
EXAMPLES = 60


@pytest.mark.parametrize("mode", ["live", "test"])
def test_schemathesis_finds_no_server_error_and_no_undocumented_answer(tmp_path: Path, mode: str) -> None:
    with service_with_key(tmp_path / "var", "fuzz", mode) as (served, key):
        schemathesis = Path(sys.executable).parent / "schemathesis"
        run = subprocess.run(
            [str(schemathesis), "run", f"{served.url}{OPENAPI_PATH}", "-H", f"Authorization: Bearer {key}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance",
             "--max-examples", str(EXAMPLES), "--workers", "1", "--seed", SEED, *(ONLY_IN_TEST_MODE if mode == "test" else ()),
             # The long poll of test events holds an answer up to 30 s, past the fuzzer's
             # request timeout; its inputs are tried by test_edge_values (every query, every
             # edge value) and its behaviour by tests/api/test_test_events.py and tests/clients/test_listen.py.
             "--exclude-operation-id", "testEvents"],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"})
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert SELECTED[mode] in run.stdout, run.stdout[:3000]  # every operation (of the mode) but the long poll
