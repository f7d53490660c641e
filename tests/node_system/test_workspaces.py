"""A run's clone is copied from the one the node keeps current, and is the run's
own all the same (D16, C5, issue 15): its own server-code and login, its
user's password kept in it, pushing as that user; the preparation's steps
are in the unit's journal; the run's home goes once the run is answered."""
import os

import pytest

from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.node.run_layout import RunHome
from ocx.node.template import template_path
from ocx.node.unit.prepare import CHECKOUT, CLONE

from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd


def test_a_runs_clone_is_its_own_and_pushes_as_its_user(node):
    before = node.clone_of(node.login("ws-dev", "gio"))
    checkout = before.open_checkout(node.home / "ws-checkout")
    (checkout / "before-the-record.txt").write_text("there before the record\n")
    newest = before.commit(checkout, "pushed just before the record")
    fields = node.record(objective="sleep 60")
    record = node.post(fields)
    unit = node.unit(record)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 60, what="the run")
    home = RunHome(unit.removesuffix(".service")).on_host
    with Repository(home / CLONE) as clone, node.repository() as served, \
            Repository(template_path(node.config)) as kept:
        assert len({clone.server_code, served.server_code, kept.server_code}) == 3  # C1: its own
        assert [u.login for u in clone.users() if "s" in u.capabilities] == [fields["user"]]
        assert clone.config("last-sync-url").startswith(f"http://{fields['user']}@")
        assert clone.config("last-sync-pw")  # it may hold its password (no no_password)
        assert clone.checkin(newest).hash == newest  # what was received before its record is there
        assert kept.config("last-sync-pw") is None  # the node's own clone keeps no password
    assert (home / CHECKOUT / "before-the-record.txt").exists()  # checked out from the tip
    # The password Fossil kept in it is its user's: a check-in from its checkout reaches the server from it.
    own = CallerClone(home / CLONE, fields["user"], node.home / "ws-as-run")
    (home / CHECKOUT / "by-the-run.txt").write_text("the run's\n")
    pushed = own.commit(home / CHECKOUT, "from the run's own clone")
    with node.repository() as served:
        assert served.sender(pushed).login == fields["user"]
    steps = [line for line in journal(unit).splitlines() if line.startswith("prepare: ")]
    assert any("copied from the node's" in line for line in steps), steps
    assert any(line.startswith("prepare: done in ") for line in steps), steps
    node.stop(record)
    node.response(record)
    # Its workspace goes once it is answered (issue 15: a copy of the history each), and systemd's link to it.
    wait_for(lambda: not home.exists(), 60, what="the answered run's home removed (cleanup.py)")
    assert not os.path.lexists(RunHome(unit.removesuffix(".service")).inside)
