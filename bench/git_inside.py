"""The git mirror's benchmark, inside the systemd container (bench/git.py starts it there).

A node set up by `ocx node init` on a copy of click.fossil; then, with the
real `git` client against the node's Fossil server at /ext/git: the first
mirror's time, a clone's time and what it holds against Fossil's own tables,
and for each of ROUNDS check-ins pushed by a login, the time from its
receipt (rcvfrom's time, the server's clock) to the first `git fetch` that
shows it, and the update's own time (the mirror unit's line in the journal).
"""
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ocx.fossil import admin
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.node import config as node_config
from ocx.node_service.git_update import mark_path, unit_name
from ocx.setup import account

NAME, PORT = "gitbench", 8596
WORK = Path("/tmp/gitbench")


def sh(*argv: str, cwd: Path | None = None) -> str:
    return subprocess.run(argv, cwd=cwd or "/", capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(WORK), "GIT_TERMINAL_PROMPT": "0"}).stdout


def wait(check, timeout: float, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout} s")


def fossil_facts(repository: str) -> dict[str, int]:
    with Repository(repository) as served:
        rows = served._rows  # the benchmark reads Fossil's own tables, as Fossil's pages count them
        return {"check-ins": rows("SELECT count(*) FROM event WHERE type='ci'")[0][0],
                "branches": rows("SELECT count(DISTINCT value) FROM tagxref WHERE tagid=8 AND tagtype>0")[0][0],
                "leaves": rows("SELECT count(*) FROM leaf")[0][0],
                "tags": rows("SELECT count(*) FROM tag WHERE tagname LIKE 'sym-%' AND substr(tagname, 5) NOT IN"
                             " (SELECT value FROM tagxref WHERE tagid=8 AND value IS NOT NULL)"
                             " AND EXISTS (SELECT 1 FROM tagxref x WHERE x.tagid=tag.tagid AND x.tagtype>0)")[0][0]}


def main(source: str, rounds: int) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    repository = Path(f"/srv/{NAME}/click.fossil")  # a directory of its own, as init asks
    repository.parent.mkdir(parents=True, exist_ok=True)
    server, _ = account.ensure("fossil", "/var/lib/ocx-fossil")  # init asks the server's account to own the directory
    os.chown(repository.parent, server.uid, server.gid)
    shutil.copy(source, repository)
    began = time.monotonic()
    made = subprocess.run(["/opt/ocx/venv/bin/python", "-m", "ocx.cli.launch", "node", "init", "--name", NAME,
                           "--port", str(PORT), "--repository", str(repository)], capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"ocx node init failed:\n{made.stdout}\n{made.stderr}")
    config = node_config.load(NAME)
    wait(lambda: mark_path(config).exists(), 600, 0.2)
    print(f"node set up and its first mirror made in {time.monotonic() - began:.1f} s (from `ocx node init`)")
    developer = "benchdev"
    password = admin.create_user(str(repository), developer, "gio", "benchdev@example.org", home=WORK / "h")
    url = f"http://{developer}:{password}@127.0.0.1:{PORT}/ext/git"
    began = time.monotonic()
    sh("git", "clone", "-q", url, str(WORK / "clone"))
    clone = WORK / "clone"
    print(f"git clone over /ext/git: {time.monotonic() - began:.2f} s")
    facts = fossil_facts(str(repository))
    refs = sh("git", "for-each-ref", "--format=%(refname)", cwd=clone).split()
    git_facts = {"check-ins": int(sh("git", "rev-list", "--all", "--count", cwd=clone)),
                 "branches": sum(1 for r in refs if r.startswith("refs/remotes/origin/") and "/HEAD" not in r
                                 and "fossil-leaf/" not in r),
                 "leaves": sum(1 for r in refs if r.startswith("refs/remotes/origin/") and "/HEAD" not in r),
                 "tags": sum(1 for r in refs if r.startswith("refs/tags/"))}
    for key in facts:
        print(f"  {key:10} Fossil {facts[key]:5}   git {git_facts[key]:5}")
    print("  (git's branches: one per Fossil branch, trunk as master, and `unknown` for check-ins no branch tag names,"
          " as Fossil's export names them; its leaves: those plus a fossil-leaf/ branch for each other Fossil leaf;"
          " a Fossil tag named `trunk` is not exported)")

    caller = CallerClone.create(WORK / "dev.fossil", f"http://127.0.0.1:{PORT}", developer, password,
                                home=WORK / "h")
    checkout = caller.open_checkout(WORK / "checkout")
    to_fetch, updates = [], []
    for i in range(rounds):
        wait(lambda: "idle" in subprocess.run(["systemctl", "show", f"ocx-node@{NAME}", "-p", "StatusText"],
                                              capture_output=True, text=True).stdout, 60, 0.1)
        time.sleep(0.5)  # a quiet node: nothing of the last round still running
        (checkout / "bench.txt").write_text(secrets.token_hex(8 + i))
        subject = f"bench {i} {secrets.token_hex(3)}"
        checkin = caller.commit(checkout, subject)
        with Repository(str(repository)) as served:
            received = served.sender(checkin).time
        wait(lambda subject=subject: subject in sh("git", "fetch", "-q", "origin", cwd=clone) + sh(
            "git", "log", "--all", "--format=%s", "-5", cwd=clone), 60, 0.02)
        to_fetch.append(time.time() - received.timestamp())
        lines = subprocess.run(["journalctl", "-u", unit_name(NAME), "-o", "cat", "--no-pager"], capture_output=True,
                               text=True).stdout
        took = re.findall(r"update\(s\) in ([0-9.]+) s", lines)
        if took:
            updates.append(float(took[-1]))
    print(f"receipt to a fetch that shows it, {rounds} check-ins: median {statistics.median(to_fetch):.2f} s, "
          f"max {max(to_fetch):.2f} s (target: median <= 1 s)")
    if updates:
        print(f"one new check-in's update (pull, export, notes, publish): median {statistics.median(updates):.2f} s, "
              f"max {max(updates):.2f} s (target <= 1 s)")
    run_fossil(["version"], home=WORK / "h")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10)
