"""`command` records in the systemd container: each check-in on their branches
run once in its own unit, then judged with a `ci` verdict (C2, D3, D17, D18, V1).

The check-ins are pushed from a real clone by a real login; the program is
a small CI script committed with them, whose behaviour each check-in sets.
"""
import json
import secrets

import pytest

from ocx.protocol.verdict import parse_verdict

from .harness import journal, systemctl, wait_for

pytestmark = pytest.mark.systemd

CI_SCRIPT = '''
import subprocess, sys, time
print("checkout:", subprocess.run(["fossil", "info"], capture_output=True, text=True).stdout.split("checkout:")[1].split()[0], flush=True)
mode = open("mode.txt").read().strip()
if mode == "pass":
    print("all 3 checks passed")
elif mode == "fail":
    print("test_parse failed: expected 2, got 3")
    sys.exit(1)
elif mode == "hang":
    time.sleep(3600)
elif mode == "eat":
    hoard = []
    while True:
        hoard.append(bytearray(8 << 20))
        hoard[-1][::4096] = b"x" * len(hoard[-1][::4096])
'''


def ci_record(node, branch: str, **fields) -> dict:
    return node.record(**{"runner": "command", "command": ["python3", "ci.py"], "user": f"ci-{secrets.token_hex(3)}",
                          "objective": "The CI checks pass", "checkins": [branch], "hears": [],
                          "budget": {"wall": "8s", "memory": "64M"}, **fields})


class Developer:
    """A real login committing from its own clone and checkout."""

    def __init__(self, node, branch: str):
        self.login = node.login(f"dev-{secrets.token_hex(2)}", "gio")
        self.clone = node.clone_of(self.login)
        self.checkout = self.clone.open_checkout(node.home / f"co-{secrets.token_hex(3)}")
        self.branch = branch
        self.first = True

    def commit(self, mode: str, branch: str | None = None) -> str:
        (self.checkout / "ci.py").write_text(CI_SCRIPT)
        (self.checkout / "mode.txt").write_text(mode + "\n")
        (self.checkout / "note.txt").write_text(secrets.token_hex(8))  # every check-in differs
        new_branch = branch or (self.branch if self.first else None)
        self.first = False
        return self.clone.commit(self.checkout, f"CI {mode}", branch=new_branch)


def ci_verdicts(node, checkin: str) -> list:
    with node.repository() as repository:
        return [t for t in repository.tag_history(checkin, ["ci"]) if t.op == "+"]


def wait_open(node, record: str) -> None:
    wait_for(lambda: (node.config.state_dir / "records" / record / "record.json").exists(), 30, 0.2,
             "the command record open")


def checkin_unit(node, record: str, checkin: str) -> str:
    return f"ocx-{node.server_code[:12]}-{record[:12]}-{checkin[:12]}.service"


def test_a_ci_record_judges_each_checkin_once_in_order_and_stays_open(node):
    branch = f"dev-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch))
    wait_open(node, record)
    developer = Developer(node, branch)
    checkins = {mode: developer.commit(mode) for mode in ("pass", "fail", "hang", "eat")}
    other = developer.commit("pass", branch=f"other-{secrets.token_hex(2)}")

    wait_for(lambda: all(ci_verdicts(node, c) for c in checkins.values()), 120, 0.5, "four ci verdicts")
    got = {}
    for mode, checkin in checkins.items():
        (tag,) = ci_verdicts(node, checkin)
        assert tag.sender.login == node.config.node_user  # D20: written as the node user
        verdict = parse_verdict(tag.value)
        assert verdict is not None and verdict.against == record, tag.value  # against the record's full hash
        got[mode] = (verdict.judgement.value, verdict.reason)
    assert got == {
        "pass": ("pass", "all 3 checks passed"),
        "fail": ("fail", "test_parse failed: expected 2, got 3"),
        "hang": ("fail", "budget: wall 8s reached"),
        "eat": ("fail", "budget: memory 64M reached"),
    }
    assert not node.responses(record)  # D17: a budget limit leaves the record open
    assert not ci_verdicts(node, other)  # another branch is not run
    assert not systemctl("list-units", "--all", "--no-legend", checkin_unit(node, record, other)).strip()

    starts, ends = [], []
    for checkin in checkins.values():
        unit = checkin_unit(node, record, checkin)
        # Exactly the check-in given: the program saw its checkout at that hash
        # (`fossil info` shows the first 40 hex digits of a SHA3 name).
        seen = [line.split()[-1] for line in journal(unit).splitlines() if line.startswith("checkout: ")]
        assert len(seen) == 1 and len(seen[0]) >= 40 and checkin.startswith(seen[0]), journal(unit).splitlines()
        ended = json.loads((node.config.state_dir / "records" / record / f"ended-{unit[:-8]}.json").read_text())
        started = json.loads((node.config.state_dir / "records" / record / f"started-{unit[:-8]}.json").read_text())
        starts.append(started["at"])
        ends.append(ended["at"])
    # D18: one at a time, in arrival order: each starts after the one before it ended.
    assert all(starts[i + 1] >= ends[i] for i in range(len(starts) - 1)), (starts, ends)
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"


def test_a_stop_ends_the_run_in_progress_and_no_later_checkin_runs(node):
    branch = f"stop-{secrets.token_hex(2)}"
    record = node.post(ci_record(node, branch, budget={"wall": "5m"}))
    wait_open(node, record)
    developer = Developer(node, branch)
    hanging = developer.commit("hang")
    unit = checkin_unit(node, record, hanging)
    wait_for(lambda: systemctl("is-active", unit).strip() == "active", 60, 0.2, "the hanging run active")
    later = developer.commit("pass")
    record_dir = node.config.state_dir / "records" / record
    wait_for(lambda: any((record_dir / "checkins").glob(f"*-{later}.json")), 60, 0.2, "the later check-in queued")
    assert systemctl("is-active", unit).strip() == "active"  # D18: the later one waits its turn
    assert not systemctl("list-units", "--all", "--no-legend", checkin_unit(node, record, later)).strip()
    node.stop(record)
    response = node.response(record)
    assert response.outcome.value == "stopped" and "stopped by admin" in response.note
    # The response is written once the stop step has recorded the end; the unit may still be finishing it.
    wait_for(lambda: systemctl("is-active", unit).strip() in ("inactive", "failed", "unknown"), 60, 0.2,
             "the stopped run's unit gone")
    # The node is done with the record once it removes its directory (cleanup.py): no later run by then, or ever.
    wait_for(lambda: not record_dir.exists(), 60, 0.2, "the answered record's directory removed")
    assert not systemctl("list-units", "--all", "--no-legend", checkin_unit(node, record, later)).strip()
    assert not ci_verdicts(node, hanging) and not ci_verdicts(node, later)


def test_two_ci_records_on_one_branch_a_failing_one_fails_the_checkin_whatever_the_other_says(node):
    """D25 amended: `make test` failing and `make lint`
    passing, both as `ci` verdicts of the node user on one check-in, are
    two verdicts against two objectives; `ocx queue` and `ocx verdicts` read
    the check-in failed and name both, whichever verdict came last."""
    from .harness import ocx

    branch = f"two-ci-{secrets.token_hex(2)}"
    tests = node.post(ci_record(node, branch, budget={"wall": "5m"}))  # runs ci.py: mode.txt says fail
    lint = node.post(ci_record(node, branch, command=["python3", "-c", "print('lint: 0 problems')"],
                               budget={"wall": "5m"}))
    wait_open(node, tests)
    wait_open(node, lint)
    checkin = Developer(node, branch).commit("fail")
    wait_for(lambda: len(ci_verdicts(node, checkin)) == 2, 120, 0.5, "both records' ci verdicts")
    judged = {parse_verdict(t.value).against: parse_verdict(t.value).judgement.value for t in ci_verdicts(node, checkin)}
    assert judged == {tests: "fail", lint: "pass"}

    queue = json.loads(ocx("queue", branch, "--at-node", node.name, "--json").stdout)
    (entry,) = queue["checkins"]
    assert entry["checkin"] == checkin and entry["outcome"] == "fail"
    assert sorted((v["objective"], v["judgement"], v["sender"]) for v in entry["counted"]) == sorted(
        [(tests, "fail", node.config.node_user), (lint, "pass", node.config.node_user)])
    readable = ocx("queue", branch, "--at-node", node.name).stdout
    assert "failed (2 counted verdicts)" in readable and f"against {tests}" in readable and f"against {lint}" in readable
    shown = ocx("verdicts", checkin, "--at-node", node.name).stdout
    assert shown.strip().endswith("2 of 2 count: failed (D25)") and tests in shown and lint in shown, shown
    # The node still answers the next thing asked of these records.
    for record in (tests, lint):
        node.stop(record)
        assert node.response(record).outcome.value == "stopped"
