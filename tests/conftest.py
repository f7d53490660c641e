"""Runs `@pytest.mark.systemd` tests where systemd is PID 1.

Where PID 1 is systemd (the test container, a real host) they run as they
are. Elsewhere each selected systemd item is replaced by a stand-in of the
same node id; the first stand-in to run builds the image, starts the
container (tests/container/) and runs every systemd test inside it ONCE;
each stand-in then reports its test's inner outcome: passed, failed with
the inner report's text, or skipped. A test that could not run fails with
the reason: a host never passes a systemd test it did not run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# `tests.container` and `ocx` importable however pytest was started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

INNER = "OCX_SYSTEMD_INNER"              # set in the container's run
RESULTS = "OCX_SYSTEMD_RESULTS"          # JSON-lines file for the outcomes


def pid1_is_systemd() -> bool:
    try:
        return Path("/proc/1/comm").read_text().strip() == "systemd"
    except OSError:
        return False


# --- inside: write each report as a JSON line ---------------------------------

def pytest_runtest_logreport(report):
    path = os.environ.get(RESULTS)
    if not path or not os.environ.get(INNER):
        return
    text = ""
    if report.failed or report.skipped:
        text = (str(report.longrepr[2]) if report.skipped and isinstance(report.longrepr, tuple)
                else report.longreprtext)
    line = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "text": text, "duration": report.duration,
            # What the test printed (figures it shows, never asserts): seen on the host with -s or -rP.
            "stdout": report.capstdout if report.when == "call" else "",
            "xfail": bool(getattr(report, "wasxfail", ""))}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


# --- on the host: one container run for all systemd items ----------------------

class ContainerRun:
    """The session's single inner run; outcome(nodeid) after run()."""

    def __init__(self, config, nodeids: list[str]):
        self.config = config
        self.nodeids = nodeids
        self.done = False
        self.error: str | None = None
        self.reports: dict[str, list[dict]] = {}
        self.output = ""
        self.timings: list[str] = []
        self.container = None

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            self._run()
        except Exception as e:   # reported as a failure of every systemd test
            self.error = f"{type(e).__name__}: {e}"

    def _run(self) -> None:
        from tests.container.systemd_container import SystemdContainer, build_image, engine

        t0 = time.monotonic()
        engine()
        image = build_image()
        t1 = time.monotonic()
        self.timings.append(f"image {image}: {t1 - t0:.1f} s (build or cache check)")
        results = Path(tempfile.mkdtemp(prefix="ocx-systemd-results-"))
        os.chmod(results, 0o777)
        self.container = SystemdContainer(image, results=results, src=ROOT)
        self.timings.append(f"container start to `running`: {self.container.start():.1f} s")
        t2 = time.monotonic()
        from tests import coverage_ratchet

        argv = coverage_ratchet.inner_argv(self.config, "/results", [
            "/opt/ocx/venv/bin/python", "-m", "pytest", "-p", "no:cacheprovider",
            "-q", "-rN", "--color=no", *self.nodeids])
        r = self.container.exec(argv, workdir="/src", env={
            INNER: "1", RESULTS: "/results/outcomes.jsonl",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HYPOTHESIS_STORAGE_DIRECTORY": "/tmp/hypothesis"})
        self.timings.append(f"inner pytest ({len(self.nodeids)} tests, exit {r.exit_code}): "
                            f"{time.monotonic() - t2:.1f} s")
        self.output = r.output
        coverage_ratchet.add_inner(self.config, results)
        path = results / "outcomes.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                rep = json.loads(line)
                self.reports.setdefault(rep["nodeid"], []).append(rep)

    def printed(self, nodeid: str) -> str:
        return "".join(r.get("stdout", "") for r in self.reports.get(nodeid, []))

    def outcome(self, nodeid: str) -> tuple[str, str]:
        if self.error:
            return "failed", f"the systemd container could not run this test: {self.error}"
        reps = self.reports.get(nodeid)
        if not reps:
            tail = "\n".join(self.output.splitlines()[-40:])
            return "failed", f"no outcome reported from the container for {nodeid}:\n{tail}"
        failed = [r for r in reps if r["outcome"] == "failed"]
        if failed:
            return "failed", "\n".join(f"[inner {r['when']}]\n{r['text']}" for r in failed)
        skipped = [r for r in reps if r["outcome"] == "skipped"]
        if skipped:
            return "skipped", skipped[0]["text"] or "skipped in the container"
        if not any(r["when"] == "call" and r["outcome"] == "passed" for r in reps):
            return "failed", f"the container never ran {nodeid}'s call phase"
        return "passed", ""

    def stop(self) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None


class InContainerItem(pytest.Item):
    """Stands in on the host for a systemd test run in the container."""

    def __init__(self, *, original: pytest.Item, **kw):
        super().__init__(**kw)
        self.original_nodeid = original.nodeid
        self.hang_seconds = 3000.0  # the first one waits on the whole inner run (tests/hang_report.py)
        self.own_markers = list(original.iter_markers())
        self.keywords.update(original.keywords)

    def runtest(self) -> None:
        run: ContainerRun = self.config.stash[_RUN]
        run.run()
        outcome, text = run.outcome(self.original_nodeid)
        print(run.printed(self.original_nodeid), end="")
        if outcome == "skipped":
            # Reported at the test's own location, not this line.
            raise pytest.skip.Exception(text, _use_item_location=True)
        if outcome == "failed":
            raise InnerFailure(text)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, InnerFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.original_nodeid} (in the systemd container)"


class InnerFailure(Exception):
    pass


_RUN = pytest.StashKey[ContainerRun]()


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get(INNER) or pid1_is_systemd():
        return
    marked = [i for i in items if i.get_closest_marker("systemd")]
    if not marked:
        return
    config.stash[_RUN] = ContainerRun(config, [i.nodeid for i in marked])
    for n, item in enumerate(items):
        if item.get_closest_marker("systemd"):
            items[n] = InContainerItem.from_parent(item.parent, name=item.name,
                                                   original=item)


def pytest_sessionfinish(session, exitstatus):
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        run.stop()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    run = config.stash.get(_RUN, None)
    if run is not None and run.done:
        terminalreporter.section("systemd container")
        for line in run.timings:
            terminalreporter.write_line(line)
        if run.error:
            terminalreporter.write_line(f"error: {run.error}")


@pytest.fixture(scope="session")
def systemd_container(pytestconfig):
    """A started SystemdContainer for host-side tests that drive it
    (restart it, exec in it). Separate from the systemd-marked tests' own."""
    from tests.container.systemd_container import SystemdContainer, build_image, engine

    engine()
    c = SystemdContainer(build_image(), src=ROOT)
    c.start()
    yield c
    c.stop()
