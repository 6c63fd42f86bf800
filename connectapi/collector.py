"""Python's cyclic garbage collector, set for a process that serves
(docs/decisions/0121-the-collector-set-for-serving.md).

With the interpreter's defaults a serving process spent a fifth of its CPU in collections
(measured on Python 3.11: 80 µs of a bare route's 350 µs a request, 115 µs of GET
/property's 550): every 700 new objects start a young collection, and every tenth of those
one of the middle generation, and the full collections that follow walk the whole heap,
the libraries' modules and the assembled service included. Frozen once the service is
assembled, those objects are left out of every collection; a larger first threshold
makes young collections rarer. Reference counting still frees what is not in a cycle at
once; cyclic garbage waits longer (the decision says how much).
"""

from __future__ import annotations

import gc

# New container objects (less those freed) between young collections; the interpreter's
# default is 700. The other thresholds stay as the interpreter has them (10 and 10 on
# 3.11 to 3.13: a middle collection every tenth young one, a full one every tenth middle).
YOUNG_THRESHOLD = 10_000


def tune_for_serving() -> None:
    """What exists now (modules, the assembled app and actors) leaves the collector's
    work for good, and young collections come every YOUNG_THRESHOLD objects.

    Called once a serving process has assembled its front (`service._run_front`, once
    per process, workers included) and by the test session once it has collected the
    tests; called again, it freezes what was made since and sets the same threshold."""
    gc.collect()  # what is garbage already is not frozen with the rest
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
