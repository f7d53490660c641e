"""Line coverage of ocx/ by the whole suite, held to a floor that only rises.

A pytest plugin (tests/run.sh loads it with `-p tests.coverage_ratchet`).
Only a run of the whole suite is measured, so a run of a few tests costs
nothing: no paths given, no -k, no -m, nothing deselected. It measures the
two pytest processes: the host's (the pure, Fossil and tool tests) and the
one inside the systemd container (tests/conftest.py runs it under coverage
when this plugin measures, and its data comes back through /results). Code
that runs only in a process of its own (`ocx` run as a program, Fossil's
hook, the web page, the node's service and units under systemd) is not
counted: measuring every such process would cost more than it tells
(docs/architecture.md, "Checks").

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
INNER_DATA_NAME = ".coverage-inner"  # in the container's results directory
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
    shown = f"line coverage of ocx/ by the suite's pytest processes: {total:.1f}% (floor {floor:g}%, tests/coverage-floor)"
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


def measuring(config: pytest.Config) -> bool:
    state = config.stash.get(_STATE, None)
    return state is not None and "coverage" in state


def inner_argv(config: pytest.Config, results_inside: str, argv: list[str]) -> list[str]:
    """The container's pytest command ARGV (python -m pytest …), measured when this run is."""
    if not measuring(config) or argv[1:3] != ["-m", "pytest"]:
        return argv
    return [argv[0], "-m", "coverage", "run", f"--data-file={results_inside}/{INNER_DATA_NAME}", *argv[1:]]


def add_inner(config: pytest.Config, results_on_host: Path) -> None:
    """The container's run has ended: its data, if any, joins the host's."""
    state = config.stash.get(_STATE, None)
    if state is not None and (results_on_host / INNER_DATA_NAME).is_file():
        state["inner"] = results_on_host / INNER_DATA_NAME


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
    if "inner" in state:  # recorded as ocx/… there too ([tool.coverage.run] relative_files)
        measure.combine([str(state["inner"])], keep=True)
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
