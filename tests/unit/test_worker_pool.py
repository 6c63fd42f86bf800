"""The supervisor's decisions for `serve --workers N`: how many, how soon again, how an end reads."""

from __future__ import annotations

import pytest

from connectapi.domain.worker_pool import MAX_WORKERS, RestartBackoff, describe_exit, parse_worker_count


def test_worker_count_is_a_whole_number_or_auto() -> None:
    assert parse_worker_count("1", cores=8) == 1
    assert parse_worker_count("4", cores=2) == 4  # more than the cores is the operator's choice
    assert parse_worker_count("auto", cores=8) == 8
    assert parse_worker_count("auto", cores=0) == 1
    assert parse_worker_count("auto", cores=10_000) == MAX_WORKERS
    for wrong in ("0", "-1", "2.5", "", "two", "٣", str(MAX_WORKERS + 1), "AUTO"):
        with pytest.raises(ValueError, match="--workers"):
            parse_worker_count(wrong, cores=8)


def test_a_crash_loop_backs_off_and_a_worker_that_ran_a_while_starts_again_soon() -> None:
    backoff = RestartBackoff(initial=0.5, maximum=30.0, stable_after=30.0)
    delays: list[float] = []
    previous = None
    for _ in range(9):  # each dies a second after its start
        previous = backoff.next_delay(previous, uptime=1.0)
        delays.append(previous)
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert backoff.next_delay(30.0, uptime=31.0) == 0.5  # it had settled: a fresh start


def test_an_exit_reads_as_its_code_or_its_signal() -> None:
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(-15) == "killed by SIGTERM"
    assert describe_exit(-200) == "killed by signal 200"
