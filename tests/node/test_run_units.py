"""The two kinds of run unit, as described before systemd holds them (run_units.py): pure.

A session's unit and a check-in run's unit get one user, budget and sandbox
(D16, D17, D34; docs/security.md, 'The unit's sandbox'); what differs is only what each run is given.
"""
import os
import subprocess
import sys
from dataclasses import fields

import pytest

from ocx.node.config import NodeConfig
from ocx.node.record_dirs import RecordDir
from ocx.node_service.context import NodeContext
from ocx.node_service import run_units
from ocx.node_service.run_units import (INBOX_INSIDE, Confinement, command_service, confinement, own_code_path,
                                        python_module, session_service)
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


def test_a_run_steps_paths_are_the_nodes_own_code_and_hold_this_ocx():
    """Without site (-S), the step's sys.path is the node's own code (D41, D47): its package's directory
    and its site-packages, absolute; the directory holding this very ocx is one of them."""
    paths = own_code_path()
    assert paths and all(os.path.isabs(p) and os.path.isdir(p) for p in paths)
    here = os.path.realpath(run_units.__file__)
    assert any(os.path.join(p, "ocx", "node_service", "run_units.py") == here for p in paths)


def test_a_run_step_runs_isolated_without_site_and_ignores_what_its_directory_plants(tmp_path):
    """The unit's argv as a process: `-I -S`, its module a word of its own; started in a directory
    holding an ocx package and a sitecustomize, with PYTHONPATH naming it, it imports neither (D41)
    and runs the node's own step (the stop step's usage, exit 2, for a wrong count of arguments)."""
    marker = tmp_path / "imported"
    plant = f"open({str(marker)!r}, 'w').close()\n"
    for name in ("ocx/__init__.py", "ocx/run_steps/__init__.py", "ocx/run_steps/stop_step.py", "sitecustomize.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(plant)
    node = NodeConfig(name="units-test", repository=str(tmp_path / "r.fossil"), url="http://127.0.0.1:8080",
                      python=sys.executable)
    argv = python_module(node, "ocx.run_steps.stop_step", "only-one")
    assert argv[:4] == [sys.executable, "-I", "-S", "-c"] and argv[5:] == ["ocx.run_steps.stop_step", "only-one"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert (done.returncode, done.stdout) == (2, "") and "usage:" in done.stderr and "stop_step" in done.stderr
    assert not marker.exists()
