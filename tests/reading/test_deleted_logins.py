"""Verdicts of deleted logins, on a real `fossil server` (D21, D25): Fossil's web page
deletes a login's user row and leaves its receipts naming its uid, and gives that uid to the next login made. No
deleted login's verdict counts, two never merge into one sender, and the
login that takes a deleted one's uid does not own its verdicts."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ocx.fossil import admin
from ocx.fossil.web import WebSession
from ocx.protocol.verdict import Judgement
from ocx.reading.verdicts import passed, verdicts

from .conftest import PLAN

pytestmark = pytest.mark.fossil


def add_login(served, login: str) -> None:
    served.passwords[login] = admin.create_user(served.path, login, "i", f"{login}@example.org", home=served.home)


def uid_of(served, login: str) -> int:
    ((uid,),) = served.sql("SELECT uid FROM user WHERE login=?", (login,))
    return uid


def delete_login(served, login: str) -> None:
    """As an admin does it: Fossil's own user page, its delete confirmed."""
    web: WebSession = served.web("admin")
    form = web._form(web.get(f"/setup_uedit?id={uid_of(served, login)}"), "setup_uedit", f"edit {login}")
    page = web.post("/setup_uedit", {**form.fields, "delete": "Delete User", "verifydelete": "on"})
    assert page.status == 302, page.status
    assert not served.sql("SELECT 1 FROM user WHERE login=?", (login,))


def test_deleted_logins_verdicts_never_count_never_merge_and_never_pass_to_a_new_login(fresh) -> None:
    served, _ = fresh
    checkin = served.commit("alice", "judge.txt", "judge me\n")
    for login in ("mallory", "oscar"):  # made last: theirs are the highest uids
        add_login(served, login)
    mallory, oscar = uid_of(served, "mallory"), uid_of(served, "oscar")
    fail = served.clone("mallory").tag(checkin, "audited", f"fail: loses data (against {PLAN})")
    pass_ = served.clone("oscar").tag(checkin, "audited", f"pass: fine (against {PLAN})")
    with served.repository() as repository:
        assert not passed(repository, checkin)  # mallory's fail counts while she exists
    delete_login(served, "oscar")
    delete_login(served, "mallory")

    with served.repository() as repository:
        shown = {v.artifact: v for v in verdicts(repository, checkin)}
        assert not passed(repository, checkin)  # no counted pass: oscar's is not one any more
    # Two deleted logins: two verdicts, not one sender "" whose latest (oscar's pass) counts.
    assert set(shown) == {fail, pass_} and not any(v.counts for v in shown.values())
    assert (shown[fail].uid, shown[pass_].uid) == (mallory, oscar)
    assert f"its sender's login (uid {mallory}) was deleted" in shown[fail].why

    add_login(served, "newbie")
    assert uid_of(served, "newbie") == mallory  # Fossil gives the next login the deleted uid
    own = served.clone("newbie").tag(checkin, "audited", f"pass: reviewed (against {PLAN})")
    with served.repository() as repository:
        shown = {v.artifact: v for v in verdicts(repository, checkin)}
        outcome_passed = passed(repository, checkin)
    # mallory's fail now reads as received from newbie, yet it is not newbie's: written as mallory (D21).
    assert set(shown) == {fail, pass_, own}
    assert shown[fail].sender == "newbie" and not shown[fail].counts
    assert "written as mallory but received from newbie" in shown[fail].why
    assert shown[own].counts and shown[own].verdict.judgement is Judgement.passed
    assert not shown[pass_].counts and shown[pass_].sender == ""
    assert outcome_passed  # newbie's own pass, and no counted fail

    done = subprocess.run([sys.executable, "-m", "ocx.cli.launch", "verdicts", checkin, "-R", str(served.path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"(deleted login, uid {oscar}): pass: fine" in done.stdout
    as_json = json.loads(subprocess.run([sys.executable, "-m", "ocx.cli.launch", "verdicts", checkin, "-R",
                                         str(served.path), "--json"], capture_output=True, text=True, timeout=120).stdout)
    assert sorted((v["sender"], v["uid"], v["counts"]) for v in as_json["verdicts"]) == sorted(
        [("", oscar, False), ("newbie", mallory, False), ("newbie", mallory, True)])
