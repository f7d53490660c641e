"""The console benchmark's part inside the systemd container (bench/console.py): prints figures, asserts nothing.

    python bench/console_inside.py CLICK_COPY [RECORDS] [LOOKS]
"""
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocx.fossil import admin  # noqa: E402
from ocx.fossil.repository import Repository  # noqa: E402
from tests.node_system.harness import Login, Node, ocx  # noqa: E402

NAME, PORT = "bench", 8484
HOME = Path("/var/tmp/ocx-bench/home")
PASSWORD = "bench-admin-" + os.urandom(6).hex()
BUDGET = {"wall": "2h", "cpu": 3600, "memory": "256M", "processes": 32}


def adopt(copy: str) -> Node:
    """A node on its own copy of click.fossil, in a directory the Fossil server's account owns."""
    from ocx.setup import account
    from ocx.setup.init import REPOSITORY_ROOT

    server, _ = account.ensure("fossil", str(REPOSITORY_ROOT))  # as `ocx node init` makes it
    directory = Path("/var/lib/ocx-bench")
    directory.mkdir(parents=True, exist_ok=True)
    repository = directory / "click.fossil"
    shutil.copyfile(copy, repository)
    for path in (directory, repository):
        os.chown(path, server.uid, server.gid)
    HOME.mkdir(parents=True, exist_ok=True)
    admin.set_password(repository, "admin", PASSWORD, home=HOME)
    began = time.monotonic()
    ocx("node", "init", NAME, "--repository", str(repository), "--port", str(PORT), timeout=600)
    print(f"a node adopted a copy of click.fossil ({repository.stat().st_size / 2**20:.1f} MiB) in "
          f"{time.monotonic() - began:.1f} s")
    from ocx.node import config as node_config

    return Node(NAME, node_config.load(NAME), Login("admin", PASSWORD), HOME)


def active_units(node: Node) -> int:
    listed = subprocess.run(["systemctl", "list-units", f"ocx-{node.server_code[:12]}-*", "--no-legend", "--plain",
                             "--state=active"], capture_output=True, text=True).stdout
    return listed.count(".service")


def quantiles(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return (f"median {statistics.median(values) * 1000:4.0f} ms, p90 {p90 * 1000:4.0f} ms, "
            f"min {values[0] * 1000:4.0f} ms")


def timed(call, looks: int) -> list[float]:
    call()  # the first look compiles nothing twice: /src's modules are cached by then
    spent = []
    for _ in range(looks):
        began = time.perf_counter()
        call()
        spent.append(time.perf_counter() - began)
    return spent


def page_alone(node: Node, viewer: str, query: str, program: list[str]) -> None:
    """PROGRAM as Fossil starts its ext program (its environment cleared), without Fossil around it."""
    env = {"FOSSIL_REPOSITORY": node.config.repository, "FOSSIL_USER": viewer, "REQUEST_METHOD": "GET",
           "SCRIPT_NAME": "/ext/ocx", "HTTP_HOST": f"127.0.0.1:{PORT}", "QUERY_STRING": query,
           "FOSSIL_NONCE": "0" * 48}
    account = pwd.getpwnam(node.config.server_account)
    subprocess.run(program, env=env, check=True, stdout=subprocess.DEVNULL, user=account.pw_uid, group=account.pw_gid,
                   cwd="/")


def main(copy: str, records: str = "100", looks: str = "20") -> None:
    count, looks_ = int(records), int(looks)
    node = adopt(copy)
    node.runner_page(node.admin)
    viewer = node.login("viewer", "2o")  # reads the forum and the code; no admin: no output, no create
    began = time.monotonic()
    sent = [node.post(node.record(objective=f"sleep 3600 (record {i})", budget=BUDGET)) for i in range(count)]
    print(f"sent {count} session records through the web form in {time.monotonic() - began:.1f} s")
    ended = [node.post(node.record(objective="exit 0")) for _ in range(5)]
    for record in ended:
        node.response(record, timeout=300)
    settled(node, sent, began)
    with Repository(node.config.repository) as repository:
        print(f"the repository: {repository.max_rcvid()} receipts; the page is {node.url}/ext/ocx")
    program = node.config.extroot / "ocx"
    door = program.read_text()
    # Before: the ext program as main installed it until the page service, ocx-page@ (a process per request).
    program.write_text(f"#!/bin/sh\nexec {node.config.python} -m ocx.page.web /etc/ocx/{NAME}.json\n")
    try:
        looks_at(node, viewer, sent, looks_, "before: the page, a process per request")
    finally:
        program.write_text(door)
    looks_at(node, viewer, sent, looks_, "after: the door, through the page service")
    status = subprocess.run(["systemctl", "show", f"ocx-page@{NAME}.service", "-p", "StatusText", "--value"],
                            capture_output=True, text=True).stdout.strip()
    print(f"the page service (ocx-page@{NAME}): {status or 'not running'}")


def settled(node: Node, sent: list[str], began: float, timeout: float = 900) -> None:
    """Until every record sent runs or was answered, or TIMEOUT: every record is open from its
    receipt (C1), its unit may still be starting on a busy host; says how many run."""
    deadline, said = time.monotonic() + timeout, 0.0
    while True:
        active = active_units(node)
        outcomes: dict[str, int] = {}
        if active < len(sent):
            for record in sent:
                for response, _ in node.responses(record):
                    outcomes[response.outcome.value] = outcomes.get(response.outcome.value, 0) + 1
        if active + sum(outcomes.values()) >= len(sent) or time.monotonic() > deadline:
            break
        if time.monotonic() - said > 60:
            print(f"... {active} units active, answered {outcomes or 'none'}, after {time.monotonic() - began:.0f} s")
            said = time.monotonic()
        time.sleep(5)
    print(f"{active} units active, answered {outcomes or 'none'} of the {len(sent)} sessions, after "
          f"{time.monotonic() - began:.0f} s")


def looks_at(node: Node, viewer: Login, sent: list[str], looks: int, what: str) -> None:
    print(f"-- {what}")
    admin_web, viewer_web = node.admin.web(node.url), viewer.web(node.url)
    for who, web in (("admin", admin_web), ("viewer", viewer_web)):
        for path in ("/ext/ocx", "/ext/ocx?part=work", f"/ext/ocx?output={sent[0]}", "/ext/ocx?branch=main"):
            print(f"{who:6} GET {path[:26]:26} through Fossil: {quantiles(timed(lambda: web.get(path), looks))}")
    size = len(admin_web.get("/ext/ocx").body)
    print(f"the whole page for the admin: {size / 1024:.0f} KiB of HTML")
    for query in ("", "part=work", "branch=main"):
        spent = timed(lambda: page_alone(node, "admin", query, [str(node.config.extroot / "ocx")]), looks)
        print(f"the ext program alone, ?{query or '':11}, no Fossil: {quantiles(spent)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
