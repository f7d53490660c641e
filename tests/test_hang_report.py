"""tests/hang_report.py for real: a pytest run of a test that outlives its bound prints that test's
stack on the run's standard error while the test is still running, and the test still passes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SLOW = '''
import time

def test_outlives_its_bound():
    time.sleep(2.5)
'''
BOUND = '''
def pytest_collection_modifyitems(items):
    for item in items:
        item.hang_seconds = 0.5
'''


def test_a_test_past_its_bound_prints_its_stack_and_still_passes(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text(SLOW)
    (tmp_path / "conftest.py").write_text(BOUND)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.hang_report",
                           "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    # Printed each half second while the test slept: its own frame, on the run's stderr, not in a capture.
    assert done.stderr.count("test_outlives_its_bound") >= 2, done.stderr
    assert "Timeout (0:00:00.500000)!" in done.stderr
