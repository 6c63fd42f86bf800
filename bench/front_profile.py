"""Where the front's time goes: py-spy samples the server while it answers one route, and the
samples are put in buckets by the code they are in (issue 28: "profile it and say in the
report where the time goes").

Buckets, first match from the innermost of our frames outwards:
- `budgets`: counting the request's budgets: from the process's budget slices, or in the
  record (BudgetKeeper, the slices, the batcher, the held connection), with the asyncpg and
  trio-asyncio work it runs;
- `other record I/O`: any other asyncpg or trio-asyncio work (none on these two routes);
- `gates`: the rest of the gate pipeline (key cache, judge, address, RateLimit headers);
- `route`: the view itself and its answer's envelope;
- `app hooks`: what every answer gets (request id, log line and metrics, a body's drain);
- `quart`, `hypercorn and h11`: the framework and the HTTP server;
- `trio`: the scheduler and socket I/O, whatever task it runs for.

Each bucket is reported in CPU microseconds per request, for GET /property and for the bare
route on the same server: the difference is what the contract's gates cost. The samples
say how the server's CPU time divides; the kernel's count of it (psutil) says how much
there was, since py-spy leaves out samples it takes for idle (`buckets`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil

BUCKETS = ("budgets", "other record I/O", "gates", "route", "app hooks", "quart", "hypercorn and h11", "trio",
           "other")
SAMPLES_PER_SECOND = 250


def py_spy() -> str:
    """The py-spy of this environment (the bench's and the tests' extras install it)."""
    beside = Path(sys.executable).with_name("py-spy")
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy is not installed: `make bench` installs it (pip install py-spy)")
    return found


def start_recording(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording `pid` for `seconds` into `out` (collapsed stacks)."""
    return subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--duration", str(max(2, round(seconds))),
                             "--rate", str(SAMPLES_PER_SECOND), "--format", "raw", "--output", str(out),
                             "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish_recording(recording: subprocess.Popen[bytes]) -> None:
    _, err = recording.communicate(timeout=120)
    if recording.returncode != 0:
        raise RuntimeError(f"py-spy failed: {err.decode(errors='replace')[-2000:]}")


def bucket_of(frames: list[str]) -> str:
    """The bucket of one sample, from its stack (outermost first)."""
    text = ";".join(frames)
    if "connectapi/budgets/" in text or any(name in text for name in ("HeldConnection.", "charge_many")):
        return "budgets"
    if "asyncpg/" in text or "trio_asyncio/" in text:
        return "other record I/O"
    # Every sample has the server's main frames (bench/server.py) at its root: ours are the
    # service's and the bare route's.
    innermost_ours = next((f for f in reversed(frames) if "connectapi/" in f or f.startswith("bare_route ")), None)
    if innermost_ours is not None:
        if "/gates.py" in innermost_ours or "ratelimit" in innermost_ours:
            return "gates"
        if any(part in innermost_ours for part in ("connectapi/http/api/", "envelope.py", "bare_route ")):
            return "route"
        if any(part in innermost_ours for part in ("connectapi/http/app.py", "observe.py")):
            return "app hooks"
    innermost = frames[-1] if frames else ""
    for bucket, marks in (("quart", ("quart/", "quart_trio/", "werkzeug/")),
                          ("hypercorn and h11", ("hypercorn/", "h11/")),
                          ("trio", ("trio/", "outcome/"))):
        if any(mark in innermost for mark in marks):
            return bucket
    return "other"


def buckets(raw: Path, requests: int, cpu_seconds: float | None = None) -> dict[str, float]:
    """CPU microseconds per request in each bucket, from py-spy's collapsed stacks.

    `cpu_seconds`: the process's CPU time over the load, as the kernel counted it. py-spy
    leaves out the samples it takes for idle, and with the server busy all along it left out
    about 40% of them (2.7 s of samples where the kernel counted 4.5 s of CPU): the samples
    then say how the time divides, the kernel how much there was.
    """
    counted: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        counted[bucket_of(stack.split(";"))] += int(count)
    per_sample_us = 1_000_000 / SAMPLES_PER_SECOND
    sampled = sum(counted.values())
    if cpu_seconds is not None and sampled:
        per_sample_us = cpu_seconds * 1_000_000 / sampled
    return {name: round(counted[name] * per_sample_us / max(1, requests), 1) for name in BUCKETS}


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far (its threads, not its children)."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)
