"""For the tests that press Ctrl-C (send themselves SIGINT): Python's own SIGINT handler, whatever
disposition the test process inherited.

A process started in the background by a shell without job control (``(cmd &)``, a CI runner's
script, ``nohup``) inherits SIGINT *ignored*, and CPython then installs no handler for it: the
test's ``os.kill(os.getpid(), SIGINT)`` does nothing and ``KeyboardInterrupt`` never comes. Found
when ci/campaign.sh, started that way, failed all four Ctrl-C tests (docs/testing.md). The
fixture installs ``signal.default_int_handler`` for the test and restores what was there.
"""
import signal
from typing import Iterator

import pytest


@pytest.fixture
def python_handles_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
