"""The tools on a real node (Part 4, D22): an admin sets up a reviewer (its
password, network on, hears the admin, 4 hours) and a fixer (its own login,
no password, only branch `fixes`, hears the admin and the reviewer, 4
hours) with `ocx create`; from inside their sandboxes, through MCP, the
reviewer audits a check-in and answers a question in its thread, the fixer
pushes a fix on `fixes` and is refused a push on another branch; the admin
stops the reviewer with `ocx stop`. In the systemd container."""
import json
import secrets
from pathlib import Path

import pytest

from ocx.protocol import Outcome

from .harness import PYTHON, journal, ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd

AGENT = Path(__file__).with_name("tools_agent.py")
RUNNER = "toolagent"


def tool_answers(node, record: str, name: str) -> list[dict]:
    prefix = f"tool {name} "
    return [json.loads(line[len(prefix):]) for line in journal(node.unit(record)).splitlines() if line.startswith(prefix)]


def waited(node, record: str, name: str, enough: int = 1, timeout: float = 90) -> list[dict]:
    try:
        return wait_for(lambda: len(tool_answers(node, record, name)) >= enough and tool_answers(node, record, name),
                        timeout, 0.5, f"{enough} answer(s) of {name}")
    except AssertionError as error:
        raise AssertionError(f"{error}\n--- {node.unit(record)} ---\n{journal(node.unit(record))[-4000:]}\n"
                             f"--- tools ---\n{journal(f'ocx-tools@{node.name}.service')[-2000:]}") from None


def scanned(node, record: str) -> list[str]:
    """The run's scan of every file it can read: some 200 MB through a regular expression, at
    the run's CPU rate, on a machine that may be busy: its own deadline, not the tools'."""
    return wait_for(lambda: [l for l in journal(node.unit(record)).splitlines() if l.startswith("scan ")],
                    300, 0.5, "the run's scan")


def holds_password(node, record: str, login: str) -> bool:
    """Whether any 32-hex token the run could read (its files, its environment) is LOGIN's password."""
    import hashlib

    lines = scanned(node, record)
    scan = json.loads(lines[0][len("scan "):])
    tokens = [t for l in journal(node.unit(record)).splitlines() if l.startswith("scan-tokens ")
              for t in json.loads(l[len("scan-tokens "):])]
    assert len(tokens) == scan["tokens"] and scan["files"] > 10
    with node.repository() as repository:
        secret = repository._one("SELECT pw FROM user WHERE login=?", (login,))[0]
        project = repository.project_code
    return secret in tokens or any(
        hashlib.sha1(f"{project}/{login}/{t}".encode()).hexdigest() == secret for t in tokens)


def as_admin(node, tool: str, raw: dict) -> dict:
    done = ocx(tool, "--input", json.dumps(raw), "--json", "--at-node", node.name, "--login", "admin",
               "--password-file", f"/etc/ocx/{node.name}.admin-password", check=False)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_reviewer_and_fixer_through_mcp(node):
    assert systemctl("is-active", f"ocx-tools@{node.name}.service").strip() == "active"
    page = {"command": [PYTHON, str(AGENT)], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki(f"sandbox/{RUNNER}", f"```json\n{json.dumps(page)}\n```\n")
    admin_clone = node.clone_of(node.admin)
    checkout = admin_clone.open_checkout(node.home / f"admin-checkout-{secrets.token_hex(3)}")
    (checkout / "work.txt").write_text("work\n")
    checkin = admin_clone.commit(checkout, "work for the reviewer")

    reviewer, fixer = f"reviewer-{secrets.token_hex(3)}", f"fixer-{secrets.token_hex(3)}"
    dry = as_admin(node, "create", {"objective": f"review {checkin[:12]}", "runner": RUNNER, "user": reviewer,
                                    "checkins": ["trunk"], "hears": ["admin"], "budget": {"wall": "4h"}, "dry_run": True})
    assert dry["stopped"] is None and dry["log"][-1]["kind"] == "would_write"
    made = as_admin(node, "create", {"objective": f"review {checkin[:12]}", "runner": RUNNER, "user": reviewer,
                                     "checkins": ["trunk"], "hears": ["admin"], "budget": {"wall": "4h"}})
    assert made["stopped"] is None, made
    review = made["result"]
    fixing = as_admin(node, "create", {"objective": "fix", "runner": RUNNER, "user": fixer, "hears": ["admin", reviewer],
                                       "restrict": {"no_password": True, "branch": "fixes"}, "budget": {"wall": "4h"}})
    assert fixing["stopped"] is None, fixing
    fix = fixing["result"]

    audited = waited(node, review, "audit")[0]
    assert audited["stopped"] is None, audited
    assert node.capabilities(reviewer)  # it ran as its own user
    with node.repository() as repository:
        assert repository.sender(audited["result"]).login == reviewer
        changes = [c for c in repository.tag_history(checkin, ["audited"]) if c.artifact == audited["result"]]
    assert changes and changes[0].value == f"pass: reads well (against {review})"

    scanned(node, review)  # it reads its deliveries only once its scan is done
    question = as_admin(node, "post", {"to": review, "text": "Is it good?"})
    assert question["stopped"] is None
    answered = waited(node, review, "post", timeout=240)[0]  # after its scan of every file it can read
    assert answered["stopped"] is None, answered
    with node.repository() as repository:
        reply = repository.post(answered["result"])
        assert reply.root == review and repository.sender(reply.hash).login == reviewer

    pushes = waited(node, fix, "push", 2)
    first, second = pushes[:2]
    assert first["stopped"] is None and first["result"], first
    with node.repository() as repository:
        pushed = repository.checkin(first["result"])
        assert (pushed.branch, pushed.sender.login) == ("fixes", fixer)
    assert second["stopped"]["field"] == "branch"
    # C6: the fixer's home holds no password of its user: no password file, none saved in its clone
    from ocx.fossil.repository import Repository
    from ocx.node.run_layout import RunHome, unit_stem
    from ocx.run_steps.prepare import CLONE, PASSWORD_FILE

    home = RunHome(unit_stem(node.server_code, fix)).on_host
    assert not (home / PASSWORD_FILE).exists() and (RunHome(unit_stem(node.server_code, review)).on_host / PASSWORD_FILE).exists()
    with Repository(home / CLONE) as clone:
        assert clone.config("last-sync-pw") is None
    # ... nor does any file it can read, nor its environment: no 32-hex token is its password
    assert not holds_password(node, fix, fixer)
    assert holds_password(node, review, reviewer)  # the control: the scan finds a password that is there
    status = tool_answers(node, fix, "status")[0]["result"]
    assert status["login"] == fixer and status["run"]["restrict"]["no_password"] is True

    stopped = as_admin(node, "stop", {"record": review[:12]})
    assert stopped["stopped"] is None
    assert node.response(review).outcome is Outcome.stopped
    as_admin(node, "stop", {"record": fix})
    assert node.response(fix).outcome is Outcome.stopped
