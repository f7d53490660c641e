"""The two kinds of run unit, as described before systemd holds them (run_units.py): pure.

A session's unit and a check-in run's unit get one user, budget and sandbox
(D16, D17, D34; docs/security.md, 'The unit's sandbox'); what differs is only what each run is given.
"""
from dataclasses import fields

import pytest

from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node_service.context import NodeContext
from ocx.node_service.run_units import INBOX_INSIDE, Confinement, command_service, confinement, session_service
from ocx.node.runner_pages import RunnerPage
from ocx.node_service.sandbox import run_hardening
from ocx.protocol import parse_message
from ocx.protocol.decide import OpenRecord
from ocx.systemd.units import TransientService

from tests.protocol.examples import ci_record, record

SERVER_CODE = "c0de" * 10
FILTER = "/opt/ocx/venv/bin/ocx-egress"
BUDGET = {"wall": "90m", "memory": "512M", "processes": 64}


def config(tmp_path) -> NodeConfig:
    return NodeConfig(name="units-test", repository=str(tmp_path / "repo" / "r.fossil"), url="http://127.0.0.1:8080",
                      cpu_quota=0.5)


def units(tmp_path, network: bool) -> tuple[TransientService, TransientService]:
    sandbox = {"network": network, "read_only": ["/srv/data"], "read_write": ["/srv/scratch"]}
    session = OpenRecord("a" * 64, parse_message(record(budget=BUDGET, sandbox=sandbox)), "t" * 40)
    command = OpenRecord("b" * 64, parse_message(ci_record(budget=BUDGET, sandbox=sandbox)), "t" * 40)
    node = config(tmp_path)
    page = RunnerPage(command=["claude"], homes=["/root/.claude"])
    egress = FILTER if network else None
    return (session_service(node, SERVER_CODE, session, page, RecordDir(tmp_path / "a"), egress),
            command_service(NodeContext(node, SERVER_CODE), command, RecordDir(tmp_path / "b"), "1" * 64, egress))


@pytest.mark.parametrize("network", [False, True])
def test_a_session_and_a_checkin_run_get_the_same_budget_sandbox_and_end(tmp_path, network):
    session, command = units(tmp_path, network)
    for name in Confinement.__annotations__:
        if name in ("state_directory", "exec_stop_post"):  # each the run's own, below
            continue
        assert getattr(session, name) == getattr(command, name), name
    for unit in (session, command):
        assert unit.slice == "ocx.slice" and unit.dynamic_user  # D3, D16
        assert (unit.memory_max, unit.tasks_max, unit.runtime_max_sec) == (512 * 2**20, 64, 90 * 60)  # D17
        assert unit.cpu_quota == 0.5
        assert unit.private_network is (not network)  # D34
        assert unit.protect_system == "strict" and unit.protect_home == "tmpfs" and unit.private_tmp
        assert list(unit.read_only_paths) == ["/srv/data"] and list(unit.read_write_paths) == ["/srv/scratch"]
        assert f"-{tmp_path / 'repo'}" in unit.inaccessible_paths  # D16: the node's repository is hidden
        assert unit.hardening == run_hardening(network, FILTER if network else None)
        assert unit.working_directory is None  # D41: the `+` steps would run in it as root
        [stop] = unit.exec_stop_post
        assert stop.privileged and "ocx.run_steps.stop_step" in stop.argv
        assert len(unit.state_directory) == 1  # its home, removed with it (D2)


def test_what_differs_is_what_each_run_is_given(tmp_path):
    session, command = units(tmp_path, network=True)
    assert session.state_directory != command.state_directory
    assert any(bind.destination == INBOX_INSIDE and bind.read_only for bind in session.bind_paths)  # D13
    assert not command.bind_paths and command.standard_input == "null"
    assert session.runtime_directory and session.runtime_directory_mode == 0o700  # D32's terminal
    assert not command.runtime_directory
    # the record, the runner and the user, or the check-in (D3)
    assert "runner claude as claude-91c0de" in session.description
    assert f"command on {'1' * 64} as ci-dev" in command.description
    assert {f.name for f in fields(TransientService)} >= set(Confinement.__annotations__)
