"""A real Fossil server per test module (tests/fossil's), for the node's tests that read one."""
from __future__ import annotations

import pytest

from fossil.conftest import start_served  # tests/fossil's real server


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    running = start_served(tmp_path_factory.mktemp("served"))
    try:
        yield running
    finally:
        running.server.stop()
