"""Line coverage of ocx/ by the whole suite, held to a floor that only rises.

A pytest plugin (tests/run.sh loads it with `-p tests.coverage_ratchet`).
Only a run of the whole suite is measured, so a run of a few tests costs
nothing: no paths given, no -k, no -m, nothing deselected. It measures the
host's pytest process: the pure, Fossil and tool tests, and the host's side
of the container's tests. Code that runs only in a subprocess (`ocx` run as
a program, Fossil's hook, the web page) or inside the systemd container (the
node's service and units) is not counted: measuring those processes would
cost more than it tells (docs/architecture.md, "Checks").

The run fails when the figure is below tests/coverage-floor, and says to
raise the floor when the figure is well above it, so that it never falls
back. Settings are pyproject.toml's [tool.coverage.*]; the data is left in
.coverage (ignored by git) for `.venv/bin/python -m coverage report`.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOOR_FILE = ROOT / "tests" / "coverage-floor"
DATA_FILE = ROOT / ".coverage"
WELL_ABOVE = 2.0  # points above the floor at which the run says to raise it
_STATE = pytest.StashKey[dict]()


def read_floor(text: str) -> float:
    """The floor file's number: the first line that is not a comment."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            return float(line)
    raise ValueError("tests/coverage-floor holds no number")


def verdict(total: float, floor: float) -> tuple[bool, str]:
    """(passes, what to say) for a whole suite's TOTAL against FLOOR, in percent."""
    shown = f"line coverage of ocx/ by the host's tests: {total:.1f}% (floor {floor:g}%, tests/coverage-floor)"
    if total < floor:
        return False, (f"{shown}: BELOW THE FLOOR. Cover the code this change added or left "
                       f"untested; the floor never comes down.")
    if total >= floor + WELL_ABOVE:
        return True, f"{shown}: raise tests/coverage-floor to {int(total) - 1} so it cannot fall back."
    return True, shown


def whole_suite(config: pytest.Config) -> bool:
    return (config.args_source == pytest.Config.ArgsSource.TESTPATHS
            and not config.option.keyword and not config.option.markexpr
            and not config.getoption("deselect", None) and not os.environ.get("OCX_SYSTEMD_INNER"))


def pytest_configure(config: pytest.Config) -> None:
    if not whole_suite(config):
        return
    import coverage

    measure = coverage.Coverage(data_file=str(DATA_FILE), config_file=str(ROOT / "pyproject.toml"))
    measure.erase()
    measure.start()
    config.stash[_STATE] = {"coverage": measure, "deselected": 0, "started": time.monotonic()}


def pytest_deselected(items: list[pytest.Item]) -> None:
    # Counted on the config through the first item (this hook has no config).
    if items:
        state = items[0].config.stash.get(_STATE, None)
        if state is not None:
            state["deselected"] += len(items)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None or "coverage" not in state:
        return
    measure = state.pop("coverage")
    measure.stop()
    measure.save()
    if exitstatus != 0 or state["deselected"]:
        state["said"] = "coverage: not judged (the suite did not pass whole)"
        return
    t0 = time.monotonic()
    with open(os.devnull, "w") as quiet:
        total = measure.report(file=quiet)
    passes, said = verdict(total, read_floor(FLOOR_FILE.read_text()))
    state["said"] = f"{said}\n(report: {time.monotonic() - t0:.1f} s; per file: .venv/bin/python -m coverage report)"
    if not passes:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None and "said" in state:
        terminalreporter.section("coverage")
        terminalreporter.write_line(state["said"])
