"""The bench's profile buckets (bench/front_profile.py): each sample goes where its code is."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.front_profile import BUCKETS, SAMPLES_PER_SECOND, bucket_of, buckets, process_cpu_seconds

ROOT = ["_run_module_as_main (<frozen runpy>:198)", "<module> (bench/server.py:157)", "run (trio/_core/_run.py:2532)",
        "unrolled_run (trio/_core/_run.py:2866)"]
SITE = "/work/main/.venv/lib/python3.11/site-packages/"
REQUEST = ROOT + ["QuartTrio.handle_request (quart_trio/app.py:146)",
                  f"Quart.preprocess_request ({SITE}quart/app.py:1546)",
                  "create_app.<locals>.gate (connectapi/http/app.py:76)"]


def test_each_sample_goes_to_the_code_it_is_in() -> None:
    statement = REQUEST + ["run_gates (connectapi/http/api/gates.py:200)",
                           "BudgetKeeper.admit_known (connectapi/budgets/keeper.py:174)",
                           "RecordCounter.charge (connectapi/budgets/batcher.py:72)",
                           f"Connection.fetch ({SITE}asyncpg/connection.py:717)"]
    assert bucket_of(statement) == "budgets"
    assert bucket_of(REQUEST + ["run_gates (connectapi/http/api/gates.py:200)",
                                "BudgetKeeper.admit_known (connectapi/budgets/keeper.py:190)",
                                "Slices.spend (connectapi/budgets/slices.py:110)"]) == "budgets"
    assert bucket_of(ROOT + ["BaseTrioEventLoop._main_loop (trio_asyncio/_base.py:728)",
                             "Handle._run (asyncio/events.py:80)"]) == "other record I/O"
    assert bucket_of(REQUEST + ["run_gates (connectapi/http/api/gates.py:190)",
                                "client_address (connectapi/http/api/gates.py:79)"]) == "gates"
    assert bucket_of(REQUEST + ["read_property (connectapi/http/api/property.py:20)"]) == "route"
    assert bucket_of(REQUEST + ["bare_route (bench/server.py:52)", "ok (connectapi/http/serving/envelope.py:28)"]) == "route"
    assert bucket_of(REQUEST + ["started (connectapi/http/observe.py:52)"]) == "app hooks"
    assert bucket_of(ROOT + [f"Headers.get ({SITE}werkzeug/datastructures/headers.py:155)"]) == "quart"
    assert bucket_of(ROOT + [f"H11Protocol.handle ({SITE}hypercorn/protocol/h11.py:116)",
                             f"Connection.next_event ({SITE}h11/_connection.py:481)"]) == "hypercorn and h11"
    assert bucket_of(ROOT) == "trio"
    assert bucket_of(ROOT + ["JSONEncoder.iterencode (json/encoder.py:258)"]) == "other"


def test_samples_become_microseconds_per_request(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(";".join(ROOT) + " 50\n" + ";".join(REQUEST + ["read_property (connectapi/http/api/property.py:20)"])
                   + " 25\n" + "garbage line\n")
    per_request = buckets(raw, requests=100)
    assert list(per_request) == list(BUCKETS)
    sample_us = 1_000_000 / SAMPLES_PER_SECOND
    assert per_request["trio"] == round(50 * sample_us / 100, 1)
    assert per_request["route"] == round(25 * sample_us / 100, 1)
    assert sum(per_request.values()) == round(75 * sample_us / 100, 1)


def test_the_kernels_cpu_time_is_divided_as_the_samples_divide(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(";".join(ROOT) + " 30\n" + ";".join(REQUEST + ["read_property (connectapi/http/api/property.py:20)"])
                   + " 10\n")
    per_request = buckets(raw, requests=1000, cpu_seconds=0.5)  # 500 µs a request, however many samples
    assert per_request["trio"] == 375.0 and per_request["route"] == 125.0
    assert sum(per_request.values()) == 500.0


def test_a_process_cpu_time_is_what_the_kernel_counts_for_it() -> None:
    before, counted_before = process_cpu_seconds(os.getpid()), time.process_time()
    while time.process_time() < counted_before + 0.1:
        pass
    spent, counted = process_cpu_seconds(os.getpid()) - before, time.process_time() - counted_before
    # /proc counts in clock ticks (a hundredth of a second), at each end
    assert abs(spent - counted) <= 0.03 and spent >= 0.07
