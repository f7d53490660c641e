"""A write cut off midway (Fossil's server killed, its host restarted) leaves a
hot journal; a read-only reader cannot roll it back, and SQLite refuses it
every read until a read-write connection does (SQLITE_READONLY_ROLLBACK).
The chaos test's driver met it after a host restart. A reader rolls it back
as Fossil's next request would, and reads the file as of its last commit."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ocx.fossil.errors import JournalWaiting
from ocx.fossil.repository import Repository
from ocx.node.faults import is_node_fault

CUT_OFF_WRITE = r"""
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size=1")  # changed pages spill into the file before the commit
db.execute("BEGIN")
db.execute("CREATE TABLE half_done(x)")
for _ in range(500):
    db.execute("INSERT INTO half_done VALUES (randomblob(4000))")
db.execute("UPDATE config SET value='cut off' WHERE name='project-name'")
os._exit(9)  # killed before its commit
"""


def cut_off_write(path: Path) -> None:
    subprocess.run([sys.executable, "-c", CUT_OFF_WRITE, str(path)], check=False, timeout=120)
    journal = Path(f"{path}-journal")
    assert journal.exists() and journal.stat().st_size > 0, "the write left no journal"
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as refused:  # what every read-only reader meets
        reader.execute("SELECT count(*) FROM config").fetchone()
    reader.close()
    assert refused.value.sqlite_errorname == "SQLITE_READONLY_ROLLBACK"


@pytest.fixture
def repository_file(tmp_path):
    path = tmp_path / "r.fossil"
    env = {**os.environ, "USER": "admin", "HOME": str(tmp_path)}
    subprocess.run(["fossil", "new", "--project-name", "before", str(path)], check=True, env=env,
                   capture_output=True, timeout=120)
    return path


@pytest.mark.fossil
def test_a_reader_opened_after_the_cut_off_write_reads_the_last_commit(repository_file):
    code = Repository(repository_file).server_code
    cut_off_write(repository_file)
    with Repository(repository_file) as repository:
        assert repository.server_code == code
        assert repository.config("project-name") == "before"
        assert not repository._rows("SELECT name FROM sqlite_master WHERE name='half_done'")
    assert not Path(f"{repository_file}-journal").exists()


@pytest.mark.fossil
def test_a_pass_whose_first_read_is_the_newest_receipt_rolls_the_cut_off_write_back_too(repository_file):
    """The pass's first read (intake.py: max_rcvid, which also reads the receipt floor's moment in one
    transaction, receipt_floor.py) goes through the same roll-back as every other read."""
    with Repository(repository_file) as repository:
        newest = repository.max_rcvid()
    cut_off_write(repository_file)
    with Repository(repository_file) as repository:
        assert repository.max_rcvid() == newest
    assert not Path(f"{repository_file}-journal").exists()


@pytest.mark.fossil
def test_a_reader_open_across_the_cut_off_write_reads_on(repository_file):
    with Repository(repository_file) as repository:  # the node's service keeps one (D38)
        before = repository.server_code
        cut_off_write(repository_file)
        assert repository.server_code == before
        assert repository.config("project-name") == "before"


def test_a_journal_only_the_server_may_roll_back_is_a_passing_fault():
    waiting = JournalWaiting("r.fossil: a cut-off write's journal waits for its server")
    assert is_node_fault(waiting)
    assert not is_node_fault(sqlite3.OperationalError("no such table: blob"))
