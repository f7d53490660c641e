"""Every step of the node cut off, and found again (C4, D6; states.py).

At each named point (ocx/node/cut.py) the node's service kills itself with
SIGKILL once, for the record under test; systemd restarts it
(Restart=on-failure) and its next pass must finish the record: answered
exactly once by the node user, the run user's letters withdrawn, the unit
gone, the workspace removed. The test holds the node's lock while it posts
the record and asks for the cut, so the node meets the point for this
record and no other.
"""
import subprocess
import time
from pathlib import Path

import pytest

from ocx.node.cut import CUT_ROOT
from ocx.node.record_dirs import node_lock
from ocx.protocol import Outcome

from .harness import journal, systemctl, wait_for
from .test_command_runs import Developer, ci_record, ci_verdicts, wait_open

pytestmark = pytest.mark.systemd


def restarts(node, since: float) -> int:
    """systemd's restarts of the node's service after a kill (NRestarts is reset by a plain start)."""
    out = subprocess.run(["journalctl", "--since", f"@{since:.3f}", "-u", f"ocx-node@{node.name}.service", "-o", "cat",
                          "--no-pager"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if "Scheduled restart job" in line)


def cut(node, point: str, record: str) -> None:
    Path(CUT_ROOT).mkdir(mode=0o700, exist_ok=True)
    (Path(CUT_ROOT) / node.name).write_text(f"{point} {record}\n")


def told(node, record: str, since: float) -> str:
    """What the node and the record's units said since SINCE, and its marks: the account of a failure."""
    lines = subprocess.run(["journalctl", "--since", f"@{since:.3f}", "-o", "short-precise", "--no-pager",
                            "-u", f"ocx-node@{node.name}.service", "-u", f"ocx-node-*@{node.name}.*",
                            "-u", f"ocx-{node.server_code[:12]}-{record[:12]}*"],
                           capture_output=True, text=True).stdout.splitlines()
    records = node.config.state_dir / "records" / record
    marks = sorted(p.name for p in records.iterdir()) if records.is_dir() else "no directory"
    cut_asked = (Path(CUT_ROOT) / node.name).exists()
    return "\n".join([*lines[-150:], f"marks: {marks}", f"cut still asked: {cut_asked}"])


def waited(node, record: str, since: float, check, timeout: float, what: str):
    """wait_for, with the node's account in the failure."""
    try:
        return wait_for(check, timeout, 0.5, what)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{told(node, record, since)}") from None


def gone(node, record: str) -> bool:
    records = node.config.state_dir / "records"
    homes = Path("/var/lib/private/ocx-runs")
    stem = node.unit(record).removesuffix(".service")
    return (not (records / record).exists() and not any(p.name.startswith(".removing-") for p in records.iterdir())
            and not any(p.name.startswith(stem) for p in homes.iterdir()))


@pytest.mark.parametrize("point", ["receipt", "starting", "started", "answering", "responded", "withdrawn", "removing"])
def test_a_session_cut_off_at_each_step_is_answered_once(node, point):
    since = time.time()
    fields = node.record(objective="exit 0")
    with node_lock(node.config):  # the node's pass waits for the cut to be asked
        record = node.post(fields)
        cut(node, point, record)
    response = node.response(record, timeout=90)
    assert response.outcome is Outcome.exited and response.note.startswith("exit 0")
    wait_for(lambda: not (Path(CUT_ROOT) / node.name).exists(), 30, what=f"the cut at {point}")
    wait_for(lambda: restarts(node, since) == 1, 30, what="systemd restarting the node")
    wait_for(lambda: gone(node, record), 60, 0.2, "the workspace removed")
    assert len(node.responses(record)) == 1
    assert node.capabilities(fields["user"]) == ""  # C5: withdrawn
    assert not systemctl("list-units", "--all", "--no-legend", node.unit(record)).strip()
    starts = [line for line in journal(node.unit(record)).splitlines() if line.startswith("Started ")]
    assert len(starts) == 1, starts  # D5: one run, whatever was cut (systemd's own account)


def test_a_session_cut_off_after_its_cpu_watch_was_armed_still_ends_at_its_cpu_budget(node):
    """The watch's first timer is there, its run not yet: the start asked again replaces the
    timer (D5) and the run is held to its cpu budget from outside it (D17)."""
    since = time.time()
    fields = node.record(objective="burn cpu", budget={"wall": "3m", "cpu": 3})
    with node_lock(node.config):
        record = node.post(fields)
        cut(node, "watched", record)
    response = node.response(record, timeout=200)
    told = subprocess.run(["journalctl", f"OCX_RECORD={record}", "-o", "cat", "--no-pager"], capture_output=True,
                          text=True).stdout + journal(node.unit(record).replace(".service", "-cpu-*.service"))
    assert (response.outcome, response.note) == (Outcome.budget, "cpu 3s reached"), told
    wait_for(lambda: restarts(node, since) == 1, 30, what="systemd restarting the node")
    wait_for(lambda: gone(node, record), 60, 0.2, "the workspace removed")
    assert len(node.responses(record)) == 1
    assert node.capabilities(fields["user"]) == ""  # C5: withdrawn
    stem = node.unit(record).removesuffix(".service")
    assert not systemctl("list-units", "--all", "--no-legend", f"{stem}*").strip()  # no timer of its watch left
    starts = [line for line in journal(node.unit(record)).splitlines() if line.startswith("Started ")]
    assert len(starts) == 1, starts


@pytest.mark.parametrize("point", ["judging", "tagged"])
def test_a_check_in_run_cut_off_while_judged_gets_one_verdict(node, point):
    branch = f"cut-{point}"
    record = node.post(ci_record(node, branch))
    wait_open(node, record)
    developer = Developer(node, branch)
    # A check-in judged first: the node's own clone is there, and behind the next check-in when the
    # cut pass is taken again (it once read the check-in's tags from that clone, and gave up).
    first = developer.commit("pass")
    wait_for(lambda: ci_verdicts(node, first), 90, 0.5, "the first check-in's verdict")
    since = time.time()
    with node_lock(node.config):
        checkin = developer.commit("pass")
        cut(node, point, record)
    waited(node, record, since, lambda: ci_verdicts(node, checkin), 90, "its verdict")
    wait_for(lambda: not (Path(CUT_ROOT) / node.name).exists(), 30, what=f"the cut at {point}")
    wait_for(lambda: restarts(node, since) == 1, 30, what="systemd restarting the node")
    stem = f"ocx-{node.server_code[:12]}-{record[:12]}-{checkin[:12]}"
    wait_for(lambda: (node.config.state_dir / "records" / record / f"verdict-{stem}.json").exists(), 60, 0.2,
             "the run judged")
    verdicts = [t for t in ci_verdicts(node, checkin) if t.sender.login == node.config.node_user]
    assert len(verdicts) == 1 and verdicts[0].value.startswith("pass: all 3 checks passed"), verdicts
    node.stop(record)
    assert node.response(record).outcome is Outcome.stopped
    wait_for(lambda: gone(node, record), 60, 0.2, "the workspace removed")  # D2: no disk kept per run
