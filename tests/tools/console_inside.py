"""Run inside the systemd container for the console's tests (test_console_on_node.py),
on the node web_node_inside.py set up: `python -m tests.tools.console_inside
STEP ARG...`, one JSON line printed.

    prepare                         the runner page `ticker` (console_program.py), a login `evil` holding i
    record LOGIN PW FIELDS [TITLE]  a record (harness defaults, FIELDS over them) in a new thread, as LOGIN
    reply LOGIN PW TO TEXT          a reply to post TO, as LOGIN
    commit LOGIN PW BRANCH FILE TEXT  a check-in of FILE on BRANCH (made from trunk if new), as LOGIN
    response RECORD [TIMEOUT]       the record's one response (outcome, note)
    active RECORD                   its session unit's ActiveState;  wait_active RECORD [TIMEOUT]
    stop RECORD                     a stop for it, as the node's admin
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

from tests.node_system.harness import Login, wait_for
from tests.tools.web_node_inside import HOME, node

TICKER = "ticker"
PROGRAM = Path(__file__).with_name("console_program.py")


def prepare() -> dict:
    running = node()
    page = {"command": [sys.executable, str(PROGRAM)], "homes": [], "env": {}}
    running.clone_of(running.admin).write_wiki(f"sandbox/{TICKER}", f"```json\n{json.dumps(page)}\n```\n")
    evil = running.login("evil", "i")
    return {"runner": TICKER, "evil": evil.password}


def record(login: str, password: str, fields: str, title: str = "OCX record") -> dict:
    running = node()
    message = running.record(**json.loads(fields))
    return {"record": running.post(message, Login(login, password), title=title)}


def reply(login: str, password: str, to: str, text: str) -> dict:
    return {"post": node().reply(to, text, Login(login, password))}


def commit(login: str, password: str, branch: str, filename: str, text: str) -> dict:
    running = node()
    clone = running.clone_of(Login(login, password))
    checkout = clone.open_checkout(HOME / f"checkout-{secrets.token_hex(4)}")
    known = subprocess.run(["fossil", "branch", "list"], cwd=checkout, capture_output=True, text=True).stdout.split()
    if branch in known:
        subprocess.run(["fossil", "update", branch], cwd=checkout, capture_output=True, check=True)
    (checkout / filename).write_text(text)
    return {"checkin": clone.commit(checkout, f"{filename} on {branch}",
                                    branch=None if branch in known else branch)}


def response(record_hash: str, timeout: str = "120") -> dict:
    found = node().response(record_hash, timeout=float(timeout))
    return {"outcome": found.outcome.value, "note": found.note}


def active(record_hash: str) -> dict:
    unit = node().unit(record_hash)
    state = subprocess.run(["systemctl", "show", "-p", "ActiveState", "--value", unit], capture_output=True,
                           text=True).stdout.strip()
    return {"unit": unit, "state": state}


def wait_active(record_hash: str, timeout: str = "120") -> dict:
    wait_for(lambda: active(record_hash)["state"] == "active", float(timeout), 0.2, f"{record_hash[:12]} active")
    return active(record_hash)


def stop(record_hash: str) -> dict:
    return {"stop": node().stop(record_hash)}


if __name__ == "__main__":
    step = sys.argv[1]
    done = {"prepare": prepare, "record": record, "reply": reply, "commit": commit, "response": response,
            "active": active, "wait_active": wait_active, "stop": stop}[step](*sys.argv[2:])
    print(json.dumps(done))
