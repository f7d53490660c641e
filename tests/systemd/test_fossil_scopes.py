"""Every `fossil` a process asks to be confined runs in a scope of its own with its bounds, moved
there before it does anything (fossil/program.py's hold, systemd/scopes.py): on a real systemd,
no mocks. The node's service confines its children so (D41;
docs/security.md, 'Class 9')."""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from ocx.fossil import program
from ocx.fossil.fossil_failure import FossilError
from ocx.systemd import cgroup
from ocx.systemd.errors import BusUnreadable
from ocx.systemd.scopes import confine, confiner

pytestmark = pytest.mark.systemd

MIB = 1024 * 1024


def show(unit: str, *names: str) -> dict[str, str]:
    out = subprocess.run(["systemctl", "show", unit, *(f"-p{n}" for n in names)], capture_output=True, text=True)
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def test_a_fossil_child_runs_in_its_own_bounded_scope_and_nothing_of_it_before(tmp_path: Path):
    seen: list[tuple[int, str, str, dict[str, str]]] = []
    confine_one = confiner("ocx-test-fossil", memory_max=64 * MIB, tasks_max=8)

    def watched(pid: int, subcommand: str) -> None:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        confine_one(pid, subcommand)
        unit = cgroup.unit_of(pid) or ""
        seen.append((pid, state, unit, show(unit, "MemoryMax", "TasksMax", "ActiveState", "Description")))

    program.confine_children(watched)
    try:
        done = program.run_fossil(["version"], home=tmp_path)
    finally:
        program.confine_children(None)
    assert done.stdout.startswith("This is fossil version")
    ((pid, state, unit, props),) = seen
    assert state == "T"  # stopped by its hold until confined: nothing of it ran in our cgroup
    assert unit.startswith(f"ocx-test-fossil-{pid}-") and unit.endswith(".scope")
    assert props == {"MemoryMax": str(64 * MIB), "TasksMax": "8", "ActiveState": "active",
                     "Description": f"ocx-test-fossil: fossil version ({pid})"}, props


def test_a_fossil_child_past_its_scopes_memory_is_killed_there_and_the_caller_goes_on(tmp_path: Path):
    """256 MiB of zeros read whole (`test-compress`, as a pull holds an artifact whole) in a scope of
    32 MiB: the kernel kills `fossil` in its scope; this process sees a failed run (FossilError)."""
    zeros = tmp_path / "zeros.bin"
    with open(zeros, "wb") as out:
        out.truncate(256 * MIB)
    program.confine_children(confiner("ocx-test-fossil", memory_max=32 * MIB, tasks_max=8))
    try:
        with pytest.raises(FossilError) as failed:
            program.run_fossil(["test-compress", str(zeros), str(tmp_path / "out")], home=tmp_path, timeout=120)
    finally:
        program.confine_children(None)
    assert failed.value.returncode == -9, failed.value  # SIGKILL: the scope's memory limit
    program.run_fossil(["test-compress", str(zeros), str(tmp_path / "out")], home=tmp_path)  # control: unconfined


def test_a_child_that_cannot_be_confined_never_runs(tmp_path: Path):
    def refuse(pid: int, subcommand: str) -> None:
        confine(pid, "not a scope name", description="bad", memory_max=MIB, tasks_max=1)

    marker = tmp_path / "ran"
    program.confine_children(refuse)
    try:
        with pytest.raises(FossilError, match="StartTransientUnit|not moved"):
            program.run_fossil(["new", str(marker)], home=tmp_path)
    finally:
        program.confine_children(None)
    assert not marker.exists()
    with pytest.raises(BusUnreadable):
        confine(1, "ocx-test-nothing.scope.bad", description="bad", memory_max=MIB, tasks_max=1)


def test_a_confined_child_ends_with_the_service_its_scope_is_bound_to(tmp_path: Path):
    """As in the node's service's own cgroup before: the service killed or restarted, its fossil goes too."""
    repository = tmp_path / "r.fossil"
    program.run_fossil(["new", str(repository)], home=tmp_path, user="admin")
    holder = f"ocx-test-holder-{uuid.uuid4().hex[:8]}.service"
    subprocess.run(["systemd-run", "--unit", holder, "-q", "sleep", "600"], check=True)
    program.confine_children(confiner("ocx-test-fossil", memory_max=64 * MIB, tasks_max=8, bound_to=holder))
    try:  # `fossil sql` reads its statements until its standard input ends: it waits meanwhile
        child = program._start(["fossil", "sql", "-R", str(repository)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"HOME": str(tmp_path)},
                               cwd=tmp_path)
    finally:
        program.confine_children(None)
    try:
        scope = cgroup.unit_of(child.pid) or ""
        assert scope.startswith("ocx-test-fossil-") and child.poll() is None
        assert show(scope, "BindsTo", "ActiveState") == {"BindsTo": holder, "ActiveState": "active"}
        subprocess.run(["systemctl", "stop", holder], check=True)
        assert child.wait(timeout=30) == -15  # SIGTERM: its scope stopped with the service it is bound to
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
