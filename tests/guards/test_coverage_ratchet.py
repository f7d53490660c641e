"""The coverage ratchet's rules, shown on figures, and that CI's command loads it."""
from __future__ import annotations

import pytest

from tests import coverage_ratchet as ratchet

from .scan import ROOT


def test_ci_runs_the_suite_with_the_ratchet_and_a_floor():
    assert "-p tests.coverage_ratchet" in (ROOT / "tests/run.sh").read_text()
    assert 0 < ratchet.read_floor(ratchet.FLOOR_FILE.read_text()) <= 100


def test_below_the_floor_fails_and_well_above_says_to_raise_it():
    passes, said = ratchet.verdict(57.9, 58)
    assert not passes and "BELOW THE FLOOR" in said and "57.9%" in said
    passes, said = ratchet.verdict(58.0, 58)
    assert passes and "raise" not in said
    passes, said = ratchet.verdict(61.4, 58)
    assert passes and "raise tests/coverage-floor to 60" in said


def test_the_floor_file_is_a_number_under_comments():
    assert ratchet.read_floor("# why\n\n 62.5  # today\n") == 62.5
    with pytest.raises(ValueError):
        ratchet.read_floor("# nothing\n")


class _Config:
    """Just what the ratchet reads of pytest's config: its stash."""

    def __init__(self) -> None:
        self.stash = pytest.Stash()


def test_the_container_run_is_measured_only_when_the_host_run_is(tmp_path):
    argv = ["/opt/ocx/venv/bin/python", "-m", "pytest", "-q", "tests/systemd"]
    config = _Config()
    assert ratchet.inner_argv(config, "/results", argv) == argv
    config.stash[ratchet._STATE] = {"coverage": object(), "deselected": 0}
    assert ratchet.inner_argv(config, "/results", argv) == [
        "/opt/ocx/venv/bin/python", "-m", "coverage", "run", "--data-file=/results/.coverage-inner",
        "-m", "pytest", "-q", "tests/systemd"]
    ratchet.add_inner(config, tmp_path)  # the container left no data: nothing to join
    assert "inner" not in config.stash[ratchet._STATE]
    (tmp_path / ratchet.INNER_DATA_NAME).write_bytes(b"")
    ratchet.add_inner(config, tmp_path)
    assert config.stash[ratchet._STATE]["inner"] == tmp_path / ratchet.INNER_DATA_NAME
