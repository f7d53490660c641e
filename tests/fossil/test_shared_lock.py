"""SQLite's shared lock taken on a file's own descriptor (fossil/shared_lock.py), against real SQLite
writers in other processes: a byte copy taken under it is one committed version of the file, whole,
whatever a writer is doing; and a commit cut off by a kill is rolled back before the copy."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ocx.fossil.copies import copy_bytes
from ocx.fossil.shared_lock import shared

DEADLINE = 60.0


def database(path: Path, rows: int = 10) -> Path:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t(n INTEGER, data BLOB)")
    connection.executemany("INSERT INTO t VALUES (?, randomblob(4000))", [(n,) for n in range(rows)])
    connection.commit()
    connection.close()
    return path


def count(path: Path) -> int:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(connection.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        connection.close()


def writer(path: Path, script: str) -> subprocess.Popen[str]:
    """A Python of its own running SCRIPT on a connection `db` to PATH; it prints `ready` once it holds
    what SCRIPT took, then waits for a line on its standard input before it goes on."""
    program = ("import sqlite3, sys\n"
               f"db = sqlite3.connect({str(path)!r}, isolation_level=None, timeout=30)\n"
               f"{script}\n")
    return subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def insert_from_another_process(path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """One row committed to PATH by a Python of its own, waiting at most TIMEOUT for SQLite's lock."""
    return subprocess.run([sys.executable, "-c", "import sqlite3\n"
                           f"db = sqlite3.connect({str(path)!r}, timeout={timeout})\n"
                           "db.execute('INSERT INTO t VALUES (1, 1)')\ndb.commit()"],
                          capture_output=True, text=True, timeout=DEADLINE)


def wait_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"


def test_a_copy_waits_for_a_writers_commit_and_holds_the_committed_version(tmp_path) -> None:
    path = database(tmp_path / "r.fossil")
    holding = writer(path, "db.execute('BEGIN EXCLUSIVE')\n"
                           "db.execute('INSERT INTO t VALUES (99, randomblob(4000))')\n"
                           "print('ready', flush=True)\nsys.stdin.readline()\ndb.execute('COMMIT')")
    try:
        wait_ready(holding)
        with open(path, "rb") as source:
            started = time.monotonic()
            assert holding.stdin is not None
            holding.stdin.write("go\n")
            holding.stdin.flush()
            with shared(source.fileno(), path):  # only once the writer committed
                copied = tmp_path / "copy.fossil"
                copied.write_bytes(path.read_bytes())
            assert time.monotonic() - started < DEADLINE
        assert holding.wait(DEADLINE) == 0
        assert count(copied) == 11  # the writer's row: taken after its commit, never half of it
    finally:
        holding.kill()
        holding.wait()


def test_a_writer_cannot_commit_while_a_copy_holds_the_lock(tmp_path) -> None:
    path = database(tmp_path / "r.fossil")
    with open(path, "rb") as source, shared(source.fileno(), path):
        refused = insert_from_another_process(path, 0.3)
        assert refused.returncode != 0 and "database is locked" in refused.stderr
    assert count(path) == 10
    done = insert_from_another_process(path, 5)  # the lock let go: the commit comes
    assert done.returncode == 0 and count(path) == 11


def test_a_commit_cut_off_by_a_kill_is_rolled_back_before_the_copy(tmp_path) -> None:
    """The writer's cache of a page or two makes SQLite write its changes into the file before the commit
    (a spill, under its EXCLUSIVE lock); killed then, it leaves a hot journal and a half-written file."""
    path = database(tmp_path / "r.fossil", rows=50)
    cut = writer(path, "db.execute('PRAGMA cache_size=2')\ndb.execute('BEGIN')\n"
                       "db.execute('UPDATE t SET data=randomblob(4000)')\n"
                       "db.execute('INSERT INTO t SELECT n+100, randomblob(4000) FROM t')\n"
                       "print('ready', flush=True)\nsys.stdin.readline()")
    try:
        wait_ready(cut)
        journal = Path(f"{path}-journal")
        assert journal.stat().st_size > 0
    finally:
        cut.send_signal(signal.SIGKILL)
        cut.wait()
    copied = tmp_path / "copy.fossil"
    copy_bytes(path, copied)
    assert count(copied) == 50  # as last committed
    assert not journal.exists() or journal.stat().st_size == 0  # rolled back by SQLite, as its reader would
    assert count(path) == 50


def test_the_lock_is_not_let_go_when_another_descriptor_of_the_file_closes(tmp_path) -> None:
    """An open file description's lock (OFD): a traditional POSIX lock would go with any close in this
    process, and a commit could then come in the middle of a copy."""
    path = database(tmp_path / "r.fossil")
    with open(path, "rb") as source, shared(source.fileno(), path):
        os.close(os.open(path, os.O_RDONLY))
        sqlite3.connect(f"file:{path}?mode=ro", uri=True).close()
        refused = insert_from_another_process(path, 0.3)
        assert refused.returncode != 0 and "database is locked" in refused.stderr


@pytest.mark.parametrize("rounds", [40])
def test_copies_beside_a_writer_committing_again_and_again_are_each_whole(tmp_path, rounds) -> None:
    path = database(tmp_path / "r.fossil")
    busy = writer(path, "print('ready', flush=True)\n"
                        "for n in range(100000):\n"
                        "    db.execute('BEGIN IMMEDIATE')\n"
                        "    db.execute('INSERT INTO t VALUES (?, randomblob(20000))', (n,))\n"
                        "    db.execute('DELETE FROM t WHERE n < ?', (n - 20,))\n"
                        "    db.execute('COMMIT')")
    try:
        wait_ready(busy)
        seen = set()
        for n in range(rounds):
            copied = tmp_path / f"copy-{n}.fossil"
            copy_bytes(path, copied)
            seen.add(count(copied))  # integrity_check inside: never half a commit
            copied.unlink()
        assert busy.poll() is None  # it was writing all along
    finally:
        busy.kill()
        busy.wait()
    assert seen


def test_a_journal_whose_header_is_zeroed_is_not_hot_and_the_copy_goes_on(tmp_path) -> None:
    """SQLite's persisted journal (journal_mode=PERSIST) stays after a commit with its header zeroed: not
    a commit cut off, so nothing is rolled back, and the copy is taken at once, never looked at again."""
    path = database(tmp_path / "r.fossil")
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=PERSIST")
    connection.execute("INSERT INTO t VALUES (7, 7)")
    connection.commit()
    connection.close()
    journal = Path(f"{path}-journal")
    assert journal.stat().st_size > 0 and journal.read_bytes()[:1] == b"\0"
    copied = tmp_path / "copy.fossil"
    started = time.monotonic()
    copy_bytes(path, copied)
    assert time.monotonic() - started < DEADLINE
    assert count(copied) == 11 and journal.exists()
