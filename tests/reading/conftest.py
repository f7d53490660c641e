"""A real `fossil server` (tests/fossil's) holding one check-in with every
kind of verdict V2 tells apart, and a branch to queue. Every tag is written
by sync as its own login, so the server records that login as its sender."""
from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fossil.conftest import Served, start_served  # tests/fossil's real server
from ocx.fossil.program import run_fossil

PLAN = "PLAN.md"
# alice pushes; carol is written in the U card; the others judge. All may push (i) and post (4).
LOGINS = {name: "i4" for name in ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "henry", "ivan")}
LOGINS["ocx-node"] = "4"  # the node user (D20), for activity's responses


def record_text(node: str, checkins: list[str], objective: str = "exit 0") -> str:
    record = {"ocx": 1, "kind": "record", "node": node, "user": f"ci-{secrets.token_hex(3)}", "runner": "command",
              "command": ["/bin/true"], "objective": objective, "checkins": checkins, "hears": [], "remote": False,
              "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []}, "budget": {"wall": "2m"}}
    return "A record.\n\n```json\n" + json.dumps(record) + "\n```\n"


@dataclass
class Verdicts:
    served: Served
    judged: str  # on dev: pushed by alice, its U card names carol
    plain: str  # on dev after it, by bob: no verdict at all
    later: str  # on dev, by alice: one counted pass
    on_dev: str  # record in a thread, checkins ["dev"]
    on_trunk: str  # record in a thread, checkins ["trunk"]
    in_ticket: str  # record in a ticket change, checkins ["dev"]
    unheld: str  # a full hash the repository does not hold
    tags: dict[str, str] = field(default_factory=dict)  # what each step wrote

    @property
    def path(self) -> Path:
        return self.served.path


def commit_on_dev(served: Served, login: str, filename: str, **options) -> str:
    """A check-in on dev, continuing the branch (Served.commit starts from trunk)."""
    directory = served.checkout(login)
    clone = served.clone(login)
    clone.pull()
    run_fossil(["update", "dev"], home=served.work / f"home-{login}", cwd=directory, user=login)
    (directory / filename).write_text(f"{filename} by {login}\n")
    return clone.commit(directory, f"{filename} by {login}", **options)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    """A served repository of this test's own, and its server-code (the node's name): stopped after."""
    served = start_served(tmp_path, LOGINS)
    try:
        with served.repository() as repository:
            node = repository.server_code
        yield served, node
    finally:
        served.server.stop()


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Verdicts]:
    served = start_served(tmp_path_factory.mktemp("verdicts"), LOGINS)
    try:
        with served.repository() as repository:
            node = repository.server_code
        admin = served.web("admin")
        on_dev = admin.new_thread("OCX record: dev CI", record_text(node, ["dev"]))
        on_trunk = admin.new_thread("OCX record: trunk CI", record_text(node, ["trunk"]))
        ticket = admin.new_ticket("CI for dev", "CI for dev, by ticket.")
        in_ticket = admin.ticket_change(ticket, record_text(node, ["dev"], "by ticket"))
        judged = served.commit("alice", "judged.txt", "judge me\n", branch="dev", user_override="carol")
        plain = commit_on_dev(served, "bob", "plain.txt")
        later = commit_on_dev(served, "alice", "later.txt")
        unheld = secrets.token_hex(32)
        world = Verdicts(served, judged, plain, later, on_dev, on_trunk, in_ticket, unheld)
        tag = lambda login, value, name="audited", **kw: served.clone(login).tag(judged, name, value, **kw)  # noqa: E731
        world.tags = {
            # bob's pass, then erin's fail replaces it in Fossil's current tag: both stand (V2)
            "bob": tag("bob", f"pass: reads well (against {PLAN})"),
            "erin": tag("erin", f"fail: misses a case (against {PLAN})"),
            # dave judges, then cancels his own: gone
            "dave": tag("dave", f"pass: first look (against {PLAN})"),
            "dave-cancel": served.clone("dave").cancel_tag(judged, "audited"),
            # alice sent the check-in: her ci verdict never counts
            "alice-ci": tag("alice", f"pass: works for me (against {PLAN})", "ci"),
            # carol is the user its U card names: hers does not count either
            "carol": tag("carol", f"pass: my own work (against {PLAN})", "ci"),
            # alice forges her tag's U card as ivan: its sender is still alice
            "alice-forged": tag("alice", f"pass: someone else says so (against {PLAN})", user_override="ivan"),
            # frank's tag whose U card names carol: frank sent it, written as carol, so it counts for nobody (D21)
            "frank": tag("frank", f"pass: checked the edge cases (against {PLAN})", user_override="carol"),
            # against records: one that lists dev counts, one that lists only trunk does not,
            # one in a ticket that lists dev counts, one the repository does not hold does not
            "grace": tag("grace", f"pass: exit 0 (against {on_dev})", "ci"),
            "henry": tag("henry", f"fail: exit 1 (against {on_trunk})", "ci"),
            "ivan": tag("ivan", f"pass: by ticket (against {in_ticket})", "ci"),
            "dave-ci": tag("dave", f"pass: nowhere (against {unheld})", "ci"),
        }
        served.clone("erin").tag(later, "audited", f"pass: fine (against {PLAN})")
        yield world
    finally:
        served.server.stop()
