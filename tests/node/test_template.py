"""When the node's clone for runs is pulled (node/template.py), on a real
server: a run's copy holds everything received before its record (or its
check-in), and a record arriving alone on a quiet node makes no pull."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ocx.fossil.repository import Repository
from ocx.node import template

pytestmark = pytest.mark.fossil


@dataclass
class Config:
    """What template.py reads of a NodeConfig; bob plays the node user (he may clone)."""

    repository: str
    url: str
    state_dir: Path
    password: str
    node_user: str = "bob"

    def node_password(self) -> str:
        return self.password


@pytest.fixture
def config(served, tmp_path) -> Config:
    made = Config(str(served.path), served.base_url, tmp_path, served.passwords["bob"])
    template.current(made, -1)  # as `ocx node init` makes it
    return made


def received(served, hash_: str) -> int:
    with served.repository() as repository:
        return repository.sender(hash_).rcvid or 0


def holds(config: Config, hash_: str) -> bool:
    with Repository(template.template_path(config)) as kept:
        return bool(kept.holding([hash_]))


def test_a_record_alone_makes_no_pull_and_what_came_before_it_is_pulled(served, config) -> None:
    before = template.held(template.template_path(config))
    quiet = served.web("admin").new_thread("a record", "on a quiet node")
    assert template.ensure(config, received(served, quiet), besides=quiet) is False
    assert template.held(template.template_path(config)) == before and not holds(config, quiet)  # no pull
    checkin = served.commit("alice", "before-the-record.txt", "x\n")
    record = served.web("admin").new_thread("another record", "just after a check-in")
    assert template.ensure(config, received(served, record), besides=record) is False
    assert holds(config, checkin) and template.held(template.template_path(config)) >= received(served, checkin)
    assert not template.lacks(template.template_path(config), received(served, checkin))


def test_a_command_runs_checkin_is_pulled_and_a_failed_pull_leaves_it_to_the_run(served, config) -> None:
    checkin = served.commit("alice", "for-a-command.txt", "y\n")
    assert not holds(config, checkin)
    assert template.ensure(config, received(served, checkin)) is False and holds(config, checkin)
    later = served.commit("alice", "unreachable.txt", "z\n")
    config.url = "http://127.0.0.1:9/"  # nothing listens there: the pull fails, the old clone stays
    assert template.ensure(config, received(served, later)) is True  # the run's copy pulls as its user
    assert holds(config, checkin) and not holds(config, later)


def test_on_a_node_elsewhere_a_record_is_placed_by_its_clones_own_receipts(served, tmp_path) -> None:
    """A node elsewhere's repository is its clone, whose receipts are its own pulls; its pass knows a
    record by the server's receipt (D37), a number of another count. The runs' clone is judged in the
    clone's numbers: a record whose earlier artifacts it holds makes no pull, even with more pulled
    after it (a burst); what came before a record is pulled."""
    from ocx.fossil.sync import CallerClone

    password = served.passwords["bob"]
    node_clone = CallerClone.create(tmp_path / "node-clone.fossil", served.base_url, "bob", password,
                                    home=tmp_path / "home")
    config = Config(str(node_clone.path), served.base_url, tmp_path, password)
    for n in range(6):  # the server's count runs ahead of the clone's
        served.web("alice").new_thread(f"chatter {n}", "before the node's quiet")
    node_clone.pull()
    template.current(config)  # idle: it holds all its node's clone holds
    record = served.web("admin").new_thread("a record", "for the node elsewhere")
    node_clone.pull()  # the follower's pull
    served.web("alice").reply(record, "straight after it, pulled before the pass acts")
    node_clone.pull()
    with Repository(node_clone.path) as clone:
        here = clone.sender(record).rcvid
    assert here is not None and here < received(served, record)  # two counts
    before = template.held(template.template_path(config))
    assert template.ensure_before(config, record) is False
    assert template.held(template.template_path(config)) == before  # no pull: it lacked nothing before the record
    checkin = served.commit("alice", "before-the-second.txt", "w\n")
    node_clone.pull()
    second = served.web("admin").new_thread("a second record", "after a check-in")
    node_clone.pull()
    assert not holds(config, checkin)
    assert template.ensure_before(config, second) is False and holds(config, checkin)  # pulled, by the node


def test_a_pull_cut_off_in_its_commit_leaves_the_runs_clone_readable_as_of_its_last_commit(served, config,
                                                                                          tmp_path) -> None:
    """The node pulls into runs.fossil in place (copies.refresh_template): a node killed inside the pull's
    commit leaves a hot journal there. Every read of the clone after it (its lineage, what it holds, the
    next pull, a run's byte copy) sees the clone as of its last commit, the journal rolled back first."""
    from ocx.fossil.copies import copy_bytes
    from tests.fossil.test_hot_journal import cut_off_write

    path = template.template_path(config)
    checkin = served.commit("alice", "before-the-cut.txt", "v\n")
    assert template.ensure(config, received(served, checkin)) is False and holds(config, checkin)
    lineage, before = template.lineage(path), template.held(path)
    cut_off_write(path)  # asserts the journal is hot: a read-only reader is refused until it is rolled back
    assert template.lineage(path) == lineage and holds(config, checkin) and template.held(path) == before
    assert not Path(f"{path}-journal").exists()
    cut_off_write(path)
    copy_bytes(path, tmp_path / "a-run.fossil")  # under its shared lock, the journal rolled back first
    with Repository(tmp_path / "a-run.fossil") as copied:
        assert copied.server_code == lineage and copied.holding([checkin])
        assert not copied._rows("SELECT name FROM sqlite_master WHERE name='half_done'")
    cut_off_write(path)
    later = served.commit("alice", "after-the-cut.txt", "w\n")
    assert template.ensure(config, received(served, later)) is False and holds(config, later)  # Fossil pulls on
    with Repository(path) as kept:
        assert not kept._rows("SELECT name FROM sqlite_master WHERE name='half_done'")
