"""When the node's clone for runs is pulled (node/template.py), on a real
server: a run's copy holds everything received before its record (or its
check-in), and a record arriving alone on a quiet node makes no pull."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from fossil.conftest import start_served  # tests/fossil's real server
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


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    running = start_served(tmp_path_factory.mktemp("template"))
    try:
        yield running
    finally:
        running.server.stop()


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
