"""admin.plan_pull_answers on real repositories: the query Fossil's server runs for every pull
it answers walks `unclustered` once SQLite has statistics for that table alone, where it walked
every artifact's hash before; made once, and no other table's statistics touched (OCX's own
queries keep their plans). Plans are asked of Fossil's own SQLite (`fossil sql`), the server's."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.copies import make_template
from ocx.fossil.program import run_fossil
from tests.git.test_mirror_click import CLICK

pytestmark = pytest.mark.fossil

# The query Fossil 2.21's server runs for every pull it answers (xfer.c, send_unclustered), as its
# --sqltrace prints it, less its last test, on a temporary table of the sync's own (onremote).
PULL_ANSWER_QUERY = ("SELECT uuid FROM unclustered JOIN blob USING(rid) /*scan*/"
                     " WHERE NOT EXISTS(SELECT 1 FROM shun WHERE uuid=blob.uuid)"
                     " AND NOT EXISTS(SELECT 1 FROM phantom WHERE rid=blob.rid)"
                     " AND NOT EXISTS(SELECT 1 FROM private WHERE rid=blob.rid)")


def plan(path: Path, home: Path) -> list[str]:
    """The steps of SQLite's plan for a pull's answer, outermost first."""
    said = run_fossil(["sql", "--readonly", "-R", str(path)], home=home,
                      input=f"EXPLAIN QUERY PLAN {PULL_ANSWER_QUERY};\n").stdout
    return [line.lstrip("|`- ") for line in said.splitlines() if "SCAN" in line or "SEARCH" in line]


def analyzed(path: Path, home: Path) -> set[str]:
    """The tables SQLite holds statistics for."""
    said = run_fossil(["sql", "--readonly", "-R", str(path)], home=home,
                      input="SELECT name FROM sqlite_schema WHERE name='sqlite_stat1';\n").stdout
    if "sqlite_stat1" not in said:
        return set()
    said = run_fossil(["sql", "--readonly", "-R", str(path)], home=home,
                      input="SELECT DISTINCT tbl FROM sqlite_stat1;\n").stdout
    return {line.strip().strip("'") for line in said.splitlines() if line.strip()}


@pytest.mark.skipif(CLICK is None, reason="click.fossil not found (../shared/data or OCX_CLICK_FOSSIL)")
def test_a_pull_answer_on_click_walks_unclustered_not_every_artifact_once_planned(tmp_path: Path) -> None:
    path, home = tmp_path / "click.fossil", tmp_path / "home"
    shutil.copyfile(CLICK, path)  # type: ignore[arg-type]
    before = analyzed(path, home)
    assert plan(path, home)[0].startswith("SCAN blob"), plan(path, home)  # Fossil's own: every artifact's hash
    assert admin.plan_pull_answers(path, home=home)
    steps = plan(path, home)
    assert steps[0] == "SCAN unclustered", steps
    assert any(step.startswith("SEARCH blob USING INTEGER PRIMARY KEY") for step in steps), steps
    assert analyzed(path, home) - before == {"unclustered"} and "blob" not in analyzed(path, home)
    assert not admin.plan_pull_answers(path, home=home)  # made once: `ocx node init` again changes nothing


def test_a_new_repository_whose_every_artifact_is_unclustered_is_planned_the_same(tmp_path: Path) -> None:
    """No statistics at all, and the count recorded equals blob's (nothing clustered yet): blob keeps
    none, so the plan does not turn on which of two equal counts SQLite would pick."""
    path, home = tmp_path / "new.fossil", tmp_path / "home"
    admin.new_repository(path, "boss", home=home)
    run_fossil(["sql", "-R", str(path)], home=home, input="DROP TABLE IF EXISTS sqlite_stat1;\n")
    assert analyzed(path, home) == set()  # no statistics at all, not even their table
    assert admin.plan_pull_answers(path, home=home)
    assert analyzed(path, home) == {"unclustered"}
    assert plan(path, home)[0] == "SCAN unclustered", plan(path, home)
    assert not admin.plan_pull_answers(path, home=home)


def test_the_runs_clone_is_planned_so_every_runs_copy_pushes_without_walking_every_artifact(served, tmp_path):
    """A client's push sends what no cluster names yet by the same query (seen with --sqltrace): every
    run's clone is a byte copy of the runs' clone (copies.make_template), so it is planned there once."""
    path, home = tmp_path / "runs.fossil", tmp_path / "home"
    make_template(path, served.base_url, "bob", served.passwords["bob"], home=home)
    assert "unclustered" in analyzed(path, home)
    assert plan(path, home)[0] == "SCAN unclustered", plan(path, home)


def test_a_repository_with_no_artifact_yet_is_said_unchanged_and_planned_once_it_has_one(tmp_path: Path) -> None:
    """SQLite records nothing for an empty table: `ocx node init` run again must not say it changed."""
    path, home = tmp_path / "empty.fossil", tmp_path / "home"
    admin.new_repository(path, "boss", home=home)
    run_fossil(["sql", "-R", str(path)], home=home, input="DELETE FROM unclustered;\n")
    assert not admin.plan_pull_answers(path, home=home)
    assert "unclustered" not in analyzed(path, home)
    run_fossil(["sql", "-R", str(path)], home=home, input="INSERT INTO unclustered SELECT rid FROM blob;\n")
    assert admin.plan_pull_answers(path, home=home)
    assert plan(path, home)[0] == "SCAN unclustered", plan(path, home)
