"""A node moved between releases with runs live (D46, D47), on the node's own releases' root: the
node's services run from the release `current` names (through the launcher, by the release's own
directory); a session and a CI record running through an accept and a roll-back each finish,
are answered once, and keep the release they started with to their stop step; what is posted
after runs on the new one; a node started after an accept was cut short comes back on `current`."""
from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from ocx.node.host_paths import RELEASES_DIRECTORY
from ocx.node.releases.services import named_by_units
from ocx.node.releases.serving import LAUNCHER
from ocx.protocol.verdict import parse_verdict
from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .battery import Committer, ci_record, ci_values, runner
from .harness import PYTHON, back_on_the_installation, ocx, systemctl, wait_for
from .release_wheels import working_tree_wheel

pytestmark = pytest.mark.systemd

ROOT = RELEASES_DIRECTORY
BUILD_SECONDS = 900  # a whole virtual environment built on a busy 2-core machine
SETTLE_SECONDS = 120
# A check-in's CI that runs until the test opens its gate (a file under /run, which every run sees
# read-only), bounded: it never outlives its budget.
CI_SCRIPT = '''import os, time
gate = open("gate.txt").read().strip()
deadline = time.monotonic() + 240
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.1)
print("all checks passed" if os.path.exists(gate) else "no gate", flush=True)
'''


def release(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return ocx("release", *args, check=check, timeout=BUILD_SECONDS)


def links() -> dict:
    return {name: (os.readlink(f"{ROOT}/{name}") if os.path.islink(f"{ROOT}/{name}") else None)
            for name in ("current", "previous", "next")}


def shown(unit: str, prop: str) -> str:
    return systemctl("show", unit, "-p", prop, "--value").strip()


def main_argv(unit: str) -> list[str]:
    pid = shown(unit, "MainPID")
    if pid in ("", "0"):
        return []
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:  # it ended meanwhile
        return []


def runs_from(unit: str, release: str) -> bool:
    argv = main_argv(unit)
    return bool(argv) and argv[0] == f"{ROOT}/{release}/bin/python"


def active(unit: str) -> bool:
    return shown(unit, "ActiveState") == "active"


def stop_step_release(unit: str) -> str:
    """The release the unit's stop step runs from, as systemd holds it (ExecStopPost's path)."""
    held = shown(unit, "ExecStopPost")
    assert "ocx.run_steps.stop_step" in held, held
    path = held.split("path=", 1)[1].split(" ;", 1)[0]
    assert path.startswith(f"{ROOT}/") and path.endswith("/bin/python"), held
    return path.removeprefix(f"{ROOT}/").removesuffix("/bin/python")


def checkin_unit(node, record: str, checkin: str) -> str:
    return f"ocx-{node.server_code[:12]}-{record[:12]}-{checkin[:12]}.service"


def stage(wheel: Path, wheelhouse: bool) -> str:
    done = release("stage", "--wheel", str(wheel), *(["--wheelhouse", WHEELHOUSE_INSIDE] if wheelhouse else []))
    return done.stdout.strip().splitlines()[-1].removeprefix("next: ")


def stage_again() -> str:
    """Staged from the current release's own wheels: another release (D45)."""
    return stage(next(Path(f"{ROOT}/current/wheels").glob("ocx-*.whl")), wheelhouse=False)


def own_services(node) -> list[str]:
    return [f"ocx-page@{node.name}.service", f"ocx-tools@{node.name}.service"]


def wake(node) -> None:
    """The node's service up (it starts on demand): a record answered."""
    node.barrier()


@pytest.fixture(scope="module")
def first(node, tmp_path_factory):
    """The node's first release, accepted from a wheel of the working tree; afterwards the node is
    left as every other test finds it: no release current, its services on the installation."""
    if not Path(WHEELHOUSE_INSIDE).is_dir():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE_INSIDE}: tests/container/build-image.sh makes it on the host")
    assert Path(LAUNCHER).is_file() and os.stat(LAUNCHER).st_mode & 0o777 == 0o755
    assert not os.path.exists(f"{ROOT}/current"), "a release is current already on the test node"
    wheels = tmp_path_factory.mktemp("wheels")
    try:
        staged = stage(working_tree_wheel(Path("/src"), wheels), wheelhouse=True)
        # The page and tools run before the move, whatever an earlier module's clean-up left stopped: the
        # page is socket-activated and may be down until a request, and only a running service is moved.
        subprocess.run(["systemctl", "start", *own_services(node)], timeout=120, check=True)
        wait_for(lambda: all(active(unit) for unit in own_services(node)), SETTLE_SECONDS, 0.2, "page and tools up")
        wake(node)  # the node's service too: the accept restarts it and waits on its first pass
        said = release("accept").stdout
        yield staged, said
    finally:
        back_on_the_installation()


def page_answers_from(node, release: str) -> None:
    """A request to the page, which its socket starts onto `current` when a move stopped it: the status
    tool answered in the page service's process, from RELEASE's code. The move's stop is a job of PID 1's
    the command does not wait on: the request waits until the page no longer runs what it ran before."""
    page = f"ocx-page@{node.name}.service"
    wait_for(lambda: not active(page) or runs_from(page, release), SETTLE_SECONDS, 0.2, f"{page} stopped")
    web = node.admin.web(node.url)
    token = web.page_json("/ext/ocx?json")["token"]
    status = web.page_json("/ext/ocx?json", {"tool": "status", "input": {}, "token": token})
    assert status["result"]["release"] == release, status


def test_an_accepted_release_runs_the_nodes_services_from_its_own_directory(node, first):
    staged, said = first
    assert links()["current"] == staged
    # The node's service first, before the post; then the others that still ran the installation: the page's
    # stopped (its socket starts it on the next request, and its imports take no CPU from the node's first
    # records on the new release), the tools' restarted; or the node's own start moved them already (D46).
    assert f"restarted ocx-node@{node.name}.service: active" in said, said
    page, tools = own_services(node)
    assert (f"restarted {page}: stopped: its socket starts it on the next request" in said
            or f"restarted {page}: restarted already" in said), said
    assert f"restarted {tools}: restarting" in said or f"restarted {tools}: restarted already" in said, said
    page_answers_from(node, staged)
    for unit in own_services(node):
        assert f"path={LAUNCHER} " in shown(unit, "ExecStart")  # `systemctl cat` names the launcher, honestly
        wait_for(lambda unit=unit: active(unit) and runs_from(unit, staged), SETTLE_SECONDS, 0.2,
                 f"{unit} on {staged}")
    wake(node)
    unit = f"ocx-node@{node.name}.service"
    assert runs_from(unit, staged), main_argv(unit)
    hooks = subprocess.run(["fossil", "hook", "list", "-R", node.config.repository], capture_output=True,
                           text=True).stdout
    assert f"{LAUNCHER} -m ocx.cli.launch hook %R" in hooks
    assert f"exec {LAUNCHER} --door page_door " in (node.config.extroot / "ocx").read_text()


RUNNER = "waits-for-a-reply"


class Session:
    """A session record whose run waits for a reply delivered after its record, then exits 0."""

    def __init__(self, node):
        self.node = node
        self.record = node.post(node.record(runner=RUNNER, budget={"wall": "10m"}))
        self.unit = node.unit(self.record)
        wait_for(lambda: active(self.unit), SETTLE_SECONDS, 0.2, f"{self.unit} running")

    def end(self) -> None:
        self.node.reply(self.record, "you may end now")

    def answered_once(self) -> None:
        response = self.node.response(self.record, timeout=SETTLE_SECONDS)  # asserts a single response
        assert response.outcome.value == "exited", response.note


class CheckIn:
    """A check-in on the CI record's branch whose run waits for its gate."""

    def __init__(self, node, ci):
        committer, record = ci
        self.node, self.gate = node, f"/run/ocx-gate-{secrets.token_hex(4)}"
        self.checkin = committer.commit({"ci.py": CI_SCRIPT, "gate.txt": self.gate + "\n"})
        self.unit = checkin_unit(node, record, self.checkin)

    def running(self) -> CheckIn:
        wait_for(lambda: active(self.unit), SETTLE_SECONDS, 0.2, f"{self.unit} running")
        return self

    def end(self) -> None:
        Path(self.gate).write_text("open")

    def judged_once(self) -> None:
        wait_for(lambda: ci_values(self.node, self.checkin), SETTLE_SECONDS, 0.2, "the check-in's ci verdict")
        (value,) = ci_values(self.node, self.checkin)
        verdict = parse_verdict(value)
        assert verdict is not None and verdict.judgement.value == "pass", value


@pytest.fixture(scope="module")
def ci(node):
    runner(node, RUNNER, "second = sys.stdin.readline()\nprint('delivered', second, flush=True)\n")
    branch = f"rel-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch, budget={"wall": "5m", "memory": "256M"}))
    wait_for(lambda: (node.config.state_dir / "records" / record / "record.json").exists(), 60, 0.2,
             "the command record open")
    yield Committer(node, branch), record
    node.stop(record)
    assert node.response(record, timeout=SETTLE_SECONDS).outcome.value == "stopped"


def moved_with_runs_live(node, ci, move: str, before: str, after: str) -> None:
    session, checkin = Session(node), CheckIn(node, ci).running()
    assert [stop_step_release(session.unit), stop_step_release(checkin.unit)] == [before, before]
    # runs are units of their own in ocx.slice, not children of a service a move restarts
    assert [shown(session.unit, "Slice"), shown(checkin.unit, "Slice")] == ["ocx.slice", "ocx.slice"]
    said = release(move).stdout
    assert links()["current"] == after, said
    page_answers_from(node, after)  # stopped by the move, and started again by this request
    for unit in own_services(node):  # moved after the node's service; the command does not wait on them
        wait_for(lambda unit=unit: active(unit) and runs_from(unit, after), SETTLE_SECONDS, 0.2,
                 f"{unit} on {after}: {said}")
    # Neither run was ended by the move; each keeps its release to its stop step (D47).
    assert active(session.unit) and active(checkin.unit)
    assert [stop_step_release(session.unit), stop_step_release(checkin.unit)] == [before, before]
    assert before in asyncio.run(named_by_units(ROOT))  # what removal reads: these units name it (D47)
    # What comes after runs on the new release: a session, and the CI record's next check-in.
    later = Session(node)
    assert stop_step_release(later.unit) == after
    assert runs_from(f"ocx-node@{node.name}.service", after)
    following = CheckIn(node, ci)
    session.end()
    checkin.end()
    session.answered_once()
    checkin.judged_once()
    following.running()  # one check-in at a time (D18): it starts once the one before ended
    assert stop_step_release(following.unit) == after
    following.end()
    later.end()
    following.judged_once()
    later.answered_once()
    assert os.path.isdir(f"{ROOT}/{before}") and os.path.isdir(f"{ROOT}/{after}")


def test_runs_live_through_an_accept_finish_on_their_own_release_and_later_ones_run_on_the_new(node, first, ci):
    staged, _ = first
    second = stage_again()
    assert second != staged
    moved_with_runs_live(node, ci, "accept", before=staged, after=second)
    assert links() == {"current": second, "previous": staged, "next": None}


def test_runs_live_through_a_roll_back_finish_on_their_own_release_and_later_ones_run_on_the_old(node, first, ci):
    staged, _ = first
    second = links()["current"]
    assert second != staged and links()["previous"] == staged, links()
    moved_with_runs_live(node, ci, "rollback", before=second, after=staged)
    assert links() == {"current": staged, "previous": second, "next": None}


CUT_ACCEPT = '''
import sys
from ocx.node.releases.links import Releases
from ocx.node.releases.staging import moving

class Cut(Exception):
    pass

def cut(step):
    if step == sys.argv[1]:
        raise Cut(step)

with moving(sys.argv[2]) as releases:
    try:
        Releases(sys.argv[2], cut).accept()
    except Cut:
        print("cut at", sys.argv[1])
'''


def test_a_node_started_after_an_accept_was_cut_comes_back_consistent_on_current(node, first):
    """An accept killed with its intent written and `current` moved, before `previous` and before any
    service restarted: the node, started, completes the move and restarts the services onto `current`."""
    was = links()["current"]
    third = stage_again()
    node_unit = f"ocx-node@{node.name}.service"
    systemctl("stop", node_unit)
    cut = subprocess.run([PYTHON, "-I", "-c", CUT_ACCEPT, "previous", ROOT], capture_output=True, text=True,
                         timeout=300, cwd="/")
    assert cut.stdout.strip() == "cut at previous", cut
    assert os.path.exists(f"{ROOT}/moving.json") and links()["current"] == third  # killed mid-move
    assert all(runs_from(unit, was) for unit in own_services(node))  # nothing restarted them
    wake(node)
    assert not os.path.exists(f"{ROOT}/moving.json")
    assert links() == {"current": third, "previous": was, "next": None}
    page_answers_from(node, third)  # the node's start stopped the page; this request starts it on `current`
    for unit in [node_unit, *own_services(node)]:
        wait_for(lambda unit=unit: runs_from(unit, third), SETTLE_SECONDS, 0.2, f"{unit} on {third}")
