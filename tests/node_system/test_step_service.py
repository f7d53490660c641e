"""A run's preparation and stop step forked already loaded by the node's step service, inside the run's
own unit (run_steps/step_door.py, step_server.py; docs/node.md 'Steps forked already loaded'), and the
service's socket attacked from inside a real run."""
import json

import pytest

from ocx.node.host_paths import steps_socket_path

from .battery import runner, session
from .harness import journal, systemctl, wait_for
from .test_boundary_page import CLAIM

pytestmark = pytest.mark.systemd

FORKED = "forked already loaded by the node's step service"


def test_a_runs_steps_are_forked_inside_its_own_unit_and_the_run_goes_as_before(node):
    record = session(node, runner(node, "stepped", "print('ran', flush=True)\n"))
    assert node.response(record, timeout=120).outcome.value == "exited"
    unit = node.unit(record)
    wait_for(lambda: f"stop_step: {FORKED}" in journal(unit), 60, 0.5, "the stop step's line")
    lines = journal(unit).splitlines()
    # Each forked step says where the kernel put it: the run's own unit's cgroup, not the service's.
    in_unit = [line for line in lines if f"{FORKED}, in /" in line and f"/{unit} (its door's start " in line]
    assert len(in_unit) == 2, lines
    assert any(line.startswith(f"prepare: {FORKED}") for line in lines), lines
    assert any(line.startswith("prepare: done in ") for line in lines) and "ran" in lines, lines
    assert systemctl("is-active", f"ocx-steps@{node.name}.service").strip() == "active"
    assert len(node.responses(record)) == 1


def test_with_the_service_gone_each_step_runs_itself_once(node):
    units = (f"ocx-steps@{node.name}.socket", f"ocx-steps@{node.name}.service")
    systemctl("stop", *units)
    try:
        record = session(node, runner(node, "unstepped", "print('ran alone', flush=True)\n"))
        assert node.response(record, timeout=120).outcome.value == "exited"
        unit = node.unit(record)
        wait_for(lambda: "ran alone" in journal(unit), 60, 0.5, "the run's line")
        text = journal(unit)
        assert FORKED not in text and "prepare: done in " in text and "ran alone" in text, text
        assert len(node.responses(record)) == 1
    finally:
        systemctl("start", *units)
    wait_for(lambda: systemctl("is-active", units[1]).strip() == "active", 60, 0.5, "the step service again")


def test_a_run_cannot_reach_the_step_service_from_inside_its_unit(node):
    """Whoever connects asks root to run a step: a run, as its own user inside its sandbox, is refused."""
    path = steps_socket_path(node.name)
    record = session(node, runner(node, "stepclaim", f"sys.argv[1:] = [{path!r}]\n" + CLAIM))
    assert node.response(record, timeout=120).outcome.value == "exited"
    unit = node.unit(record)
    wait_for(lambda: "claim " in journal(unit), 60, 0.5, "the run's report")
    tried = json.loads(next(line for line in journal(unit).splitlines() if line.startswith("claim "))[6:])
    assert not tried.get("connected") and tried.get("error") in ("PermissionError", "FileNotFoundError"), tried
    assert systemctl("is-active", f"ocx-steps@{node.name}.service").strip() == "active"
