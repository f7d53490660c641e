"""A run's preparation as its unit runs it (run_steps/prepare.py: prepare_run), on a real server: the run
user made on the served repository and the run's home made side by side, neither waiting for the other.
The password is chosen first, so the home's clone keeps it while the user is made (docs/node.md, 'The
run user's password chosen first')."""
from __future__ import annotations

import secrets
import sqlite3
import threading
import time

import pytest

from node.test_template import Config
from ocx.fossil.web import WebSession
from ocx.node import spare, template
from ocx.node.record_store import RecordStore
from ocx.node.run_layout import PASSWORD_FILE
from ocx.node.spare import CLONE
from ocx.node.states import Mark
from ocx.run_steps.prepare import RUN_USER_CAPABILITIES, Preparation, prepare_run

pytestmark = pytest.mark.fossil

HOLD = 3.0  # seconds the served repository's write lock is held: the user's making waits that long


@pytest.fixture
def config(served, tmp_path) -> Config:
    made = Config(str(served.path), served.base_url, tmp_path / "state", served.passwords["bob"])
    made.state_dir.mkdir()
    template.current(made)
    return made


def step_for(config: Config, tmp_path, login: str, *, ahead: int | None) -> Preparation:
    home, marks, fossil_home = tmp_path / "runs" / login, tmp_path / "marks", tmp_path / "fossil-home"
    marks.mkdir()
    RecordStore(marks).mark(Mark.STARTING, {"unit": f"{login}.service", "at": time.time()}, login)  # the node's
    return Preparation(config.repository, config.url, login, home, marks, login, fossil_home,
                       template.template_path(config), ahead=ahead)


def said_at(out: str, what: str) -> tuple[int, int]:
    """(the line's index, its milliseconds) of the first `prepare: WHAT…: N ms` line."""
    for index, line in enumerate(out.splitlines()):
        if line.startswith(f"prepare: {what}"):
            return index, int(line.rsplit(": ", 1)[1].removesuffix(" ms"))
    raise AssertionError(f"no 'prepare: {what}' in:\n{out}")


@pytest.mark.parametrize("made_ahead", [True, False], ids=["home made ahead", "home made afresh"])
def test_the_home_keeps_the_password_while_the_run_user_is_made(served, config, tmp_path, capsys,
                                                                  made_ahead) -> None:
    """The served repository is held locked, as a busy server holds it: Fossil's writes of the run user
    wait, the home's own Fossil run (another file) does not. Once both are done, the password the
    clone and the password file keep logs in as the run user, who holds exactly D19's letters."""
    login = f"run-{secrets.token_hex(3)}"
    clone, mark = template.template_path(config), template.held(template.template_path(config))
    step = step_for(config, tmp_path, login, ahead=mark if made_ahead else None)
    if made_ahead:
        spare.make(clone, mark, login="bob", lineage=template.lineage(clone), count=1)
        assert spare.take(clone, step.home, lineage=template.lineage(clone), upto=mark) == mark
    locker = sqlite3.connect(config.repository, isolation_level=None, timeout=30, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")  # readers go on; a writer waits for it (Fossil's busy timeout)
    letting_go = threading.Timer(HOLD, locker.rollback)
    began = time.monotonic()
    letting_go.start()
    try:
        prepare_run(step)
    finally:
        letting_go.join()
        locker.close()
    assert time.monotonic() - began >= HOLD  # the user's making did wait for the lock
    out = capsys.readouterr().out
    kept, kept_ms = said_at(out, f"made {login}'s, its password kept in it")
    made_user, user_ms = said_at(out, f"(meanwhile) run user {login}")
    assert kept < made_user and user_ms >= HOLD * 1000, out  # the clone kept it first, the user waited
    assert kept_ms < HOLD * 1000, out  # and the home did not wait for the user
    password = (step.home / PASSWORD_FILE).read_text().strip()
    WebSession(served.base_url, login, password)  # the password set is the one kept: it logs in
    with served.repository() as repository:
        assert sorted(repository.user(login).capabilities) == sorted(RUN_USER_CAPABILITIES)
    own = sqlite3.connect(f"file:{step.home / CLONE}?mode=ro", uri=True)
    try:
        names = {name for (name,) in own.execute("SELECT name FROM config WHERE name LIKE 'last-sync-%'")}
    finally:
        own.close()
    assert "last-sync-pw" in names, names  # the clone keeps it too (obscured, as Fossil keeps it)
    assert (step.marks / f"prepared-{login}.json").exists()  # its last act
