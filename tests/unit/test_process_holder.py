"""One holder id per process on every lease (storage/leases.py), a new one in a forked child."""

from __future__ import annotations

import multiprocessing
import os
import socket

from connectapi.storage.leases import process_holder


def _child_holder(queue: "multiprocessing.Queue[str]") -> None:
    queue.put(process_holder())


def test_every_lease_of_a_process_has_one_holder_and_a_forked_child_its_own() -> None:
    mine = process_holder()
    assert process_holder() == mine
    host, pid, random_part = mine.rsplit(":", 2)
    assert (host, pid) == (socket.gethostname(), str(os.getpid())) and len(random_part) == 12
    forked = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = forked.Queue()
    child = forked.Process(target=_child_holder, args=(queue,))
    child.start()
    theirs = queue.get(timeout=30)
    child.join(30)
    assert theirs != mine and theirs.rsplit(":", 2)[1] == str(child.pid)
