"""A test still running after its bound prints every thread's stack on the run's own standard
error, again after each further bound, and goes on (loaded by tests/run.sh with -p).

CI stops the whole suite at 90 minutes. A hang then showed only where the output ended; with this
it shows the stack it waits in within minutes. Nothing fails for a time here: a slow test only
prints its stack and still gets its own outcome.
"""
from __future__ import annotations

import faulthandler
import os

import pytest

BOUND_SECONDS = 600.0  # far above any test's own time on a busy machine, but for the one below
# The first systemd test stands in for the container's whole inner suite (25 minutes on a busy
# machine): it says its own bound (tests/conftest.py, InContainerItem.hang_seconds).

# Taken as pytest loads this plugin, before it captures descriptor 2 around each test: a stack
# printed into a test's capture would never be read if that test never ends.
_STDERR = os.dup(2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    seconds = float(getattr(item, "hang_seconds", BOUND_SECONDS))
    faulthandler.dump_traceback_later(seconds, repeat=True, file=_STDERR)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
