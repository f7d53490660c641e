"""Run inside one of the two hosts of tests/elsewhere (a systemd container):
`python -m tests.elsewhere.on_host STEP ARGS...`; prints one JSON line.

On the server host (the server's node `srv`, its Fossil server listening on
every address, --public):
    server-init                     ocx node init; a runner page, a person, the admin's password
    login NAME LETTERS              a person's login with exactly LETTERS; its password
    post FIELDS_JSON [BY]           a record posted through Fossil's forms (by the admin, or BY)
    reply TO TEXT [BY]              a reply
    stop NODE RECORD [BY]           a stop for RECORD of NODE
    answers RECORD                  every response to RECORD with its sender (rcvfrom)
    letters LOGIN                   LOGIN's own letters and contact
    status                          `ocx status` on the server's node, as the admin
    sql QUERY                       read-only
    commit BRANCH                   the admin checks a file in on BRANCH; its hash
    tags CHECKIN                    every `ci` and `audited` change on CHECKIN with its sender
    give LOGIN LETTERS              LOGIN's letters set on the served repository (no artifact)
    ticket FIELDS_JSON              a new ticket whose comment holds a record; (ticket, record)
    forged-ticket FIELDS_JSON       mallory (no admin) pushes a ticket change with a record and an admin's U card
    lost RECORD                     the admin answers RECORD lost by hand (stop --lost, D31)
    checkin-sender HASH             who the served repository received HASH from, and its branch
    join-token NAME [BY]            BY (the admin, or a login made here) posts the console's join form for NAME
    join-tokens                     the page's kept join tokens: each file's name, mode and text
On the build host (a node elsewhere, `build1`):
    build-init URL PASSWORD_FILE    ocx node init --name build1 --server URL
    build-join NAME URL TOKEN_FILE  ocx node init --name NAME --server URL --token-file TOKEN_FILE, unchecked
    quiet NAME                      node NAME's follower stopped (a node made only to join, out of later tests' way)
    template HASH...                the runs' clone's mark, its node's clone's newest receipt, and which HASHes
                                    the node's clone holds
    active UNIT                     the unit's ActiveState
    journal UNIT                    its journal's tail
    mentions UNIT TEXT              how often its whole journal says TEXT
    code [NAME]                     its clone's server-code (build1's, or node NAME's)
    started UNIT                    InactiveExit and ExecMainStart timestamps, to the microsecond
    steps UNIT RECORD               when the node logged starting it; its preparation's mark; when the
                                    follower handed each answer over
On either:
    idle NAME                       whether node NAME's service is idle (or not up): nothing pending
    receipt HASH                    (server) when the served repository received HASH (rcvfrom)
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.node_system.harness import PYTHON, Login, Node, journal, ocx, wait_for

SERVER, BUILD, PORT = "srv", "build1", 8080
AGENT = Path(__file__).resolve().parents[1] / "node_system" / "tools_agent.py"  # calls OCX's tools through MCP
HOME = Path("/var/tmp/elsewhere-home")


def server() -> Node:
    from ocx.node import config as node_config
    from ocx.setup.init import admin_password_file

    HOME.mkdir(parents=True, exist_ok=True)
    node = Node(SERVER, node_config.load(SERVER), Login("admin", admin_password_file(SERVER).read_text().strip()),
                HOME)
    saved = HOME / "logins.json"
    if saved.exists():
        node.logins = {k: Login(k, v) for k, v in json.loads(saved.read_text()).items()}
    return node


def _keep(node: Node) -> None:
    (HOME / "logins.json").write_text(json.dumps({k: v.password for k, v in node.logins.items()}))


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/index", timeout=2):
            return True
    except OSError:
        return False


def server_init() -> dict:
    ocx("node", "init", "--name", SERVER, "--port", str(PORT), "--public")
    node = server()
    wait_for(lambda: _answers(node.url), 30, what="the Fossil server")
    node.runner_page(node.admin)
    agent = {"command": [PYTHON, str(AGENT)], "homes": [], "env": {}}
    node.clone_of(node.admin).write_wiki("sandbox/toolagent", f"```json\n{json.dumps(agent)}\n```\n")
    return {"server_code": node.server_code, "admin_password": node.admin.password, "node_user": node.config.node_user}


def login(name: str, letters: str) -> dict:
    node = server()
    made = node.login(name, letters)
    _keep(node)
    return {"login": name, "password": made.password}


def post(fields: str, by: str | None = None) -> dict:
    node = server()
    message = node.record(**json.loads(fields))
    return {"record": node.post(message, node.logins[by] if by else None), "user": message["user"]}


def reply(to: str, text: str, by: str | None = None) -> dict:
    node = server()
    return {"post": node.reply(to, text, node.logins[by] if by else None)}


def stop(node_code: str, record: str, by: str | None = None) -> dict:
    node = server()
    message = {"ocx": 1, "kind": "stop", "node": node_code, "stops": record}
    return {"post": node.reply(record, "Stop it.\n\n```json\n" + json.dumps(message) + "\n```\n",
                               node.logins[by] if by else None)}


def answers(record: str) -> dict:
    return {"responses": [[r.outcome.value, r.note, r.node, by] for r, by in server().responses(record)]}


def letters(login_name: str) -> dict:
    with server().repository() as repository:
        user = repository.user(login_name)
    return {"letters": user.capabilities, "contact": user.contact}


def status() -> dict:
    done = ocx("status", "--at-node", SERVER, "--login", "admin", "--password-file",
               str(Path("/etc/ocx") / f"{SERVER}.admin-password"), "--json")
    return json.loads(done.stdout)


def sql(query: str) -> dict:
    import sqlite3

    db = sqlite3.connect(f"file:{server().config.repository}?mode=ro", uri=True)
    try:
        return {"rows": [list(row) for row in db.execute(query).fetchall()]}
    finally:
        db.close()


def commit(branch: str) -> dict:
    import secrets

    from ocx.fossil.fossil_failure import FossilError

    node = server()
    clone = node.clone_of(node.admin)
    place = HOME / f"checkout-{secrets.token_hex(3)}"
    try:  # on the branch's tip when it exists, else a new branch from trunk
        checkout, new = clone.open_checkout(place, branch), False
    except FossilError:
        checkout, new = clone.open_checkout(place), True
    (checkout / f"file-{secrets.token_hex(3)}.txt").write_text("work\n")
    return {"checkin": clone.commit(checkout, f"work on {branch}", branch=branch if new else None)}


def tags(checkin: str) -> dict:
    with server().repository() as repository:
        changes = repository.tag_history(checkin, ["audited", "ci"])
    return {"tags": [[c.name, c.value, c.sender.login] for c in changes]}


def give(login_name: str, letters: str) -> dict:
    from ocx.fossil import admin

    node = server()
    admin.set_capabilities(node.config.repository, login_name, letters, home=node.home)
    return {"login": login_name, "letters": letters}


def ticket(fields: str) -> dict:
    from tests.node_system.harness import fenced

    node = server()
    message = node.record(**json.loads(fields))
    web = node.admin.web(node.url)
    made = web.new_ticket("A record in a ticket", "A ticket for a run.")
    change = web.ticket_change(made, fenced(message))
    return {"ticket": made, "record": change, "user": message["user"]}


def forged_ticket(fields: str) -> dict:
    """As tests/node_system/test_tickets.py: the U card says admin, the server records mallory."""
    import secrets

    from ocx.fossil.program import run_fossil
    from tests.node_system.harness import fenced

    node = server()
    made = node.admin.web(node.url).new_ticket("Forgery", "Someone will forge a record here.")
    mallory = node.login("mallory", "gio234rcw")
    _keep(node)
    clone = node.clone_of(node.logins["mallory"])
    home = str(HOME / f"forger-{secrets.token_hex(3)}")
    run_fossil(["user", "new", "admin", "forged", "x", "-R", str(clone.path)], home=home, input="x\nx\n")
    run_fossil(["user", "default", "admin", "-R", str(clone.path)], home=home)
    clone.pull()
    message = node.record(**json.loads(fields))
    text = fenced(message).replace("\\", "\\\\").replace("\n", "\\n").replace(" ", "\\s")
    run_fossil(["ticket", "change", made, "+comment", text, "-q", "-R", str(clone.path)], home=home, user="admin")
    clone.push()

    def forged():
        with node.repository() as repository:
            return next((c for c in repository.ticket_changes(made) if message["user"] in (c.comment or "")), None)

    change = wait_for(forged, 30, what="the forged change on the server")
    return {"ticket": made, "record": change.hash, "u_card": change.user, "sender": change.sender.login,
            "user": message["user"], "mallory": mallory.name}


def lost(record: str) -> dict:
    done = ocx("stop", "--record", record, "--lost", "--json", "--at-node", SERVER, "--login", "admin",
               "--password-file", str(Path("/etc/ocx") / f"{SERVER}.admin-password"), check=False)
    return json.loads(done.stdout)


def checkin_sender(hash_: str) -> dict:
    with server().repository() as repository:
        found = repository.checkin(hash_)
    return {"sender": found.sender.login, "branch": found.branch, "user": found.user}


def ticket_answers(ticket_id: str, record: str) -> dict:
    from tests.node_system.harness import ticket_responses

    return {"responses": [[r.outcome.value, r.note, r.node, by] for r, by in ticket_responses(server(), ticket_id,
                                                                                             record)]}


def join_token_through_page(web, name: str) -> tuple[str | None, str]:
    """WEB's login posts the console's join form for NAME, with the page's token from the console (or, for a
    viewer shown no form, from its JSON door): (the join token the page shows once, or None; the page)."""
    console = web.get("/ext/ocx").text
    found = re.search(r'name="form" value="join-token"><input type="hidden" name="token" value="([0-9a-f]*)"',
                      console)
    signed = found.group(1) if found else web.page_json("/ext/ocx?json")["token"]
    page = web.post("/ext/ocx", {"form": "join-token", "token": signed, "name": name}).text
    shown = re.search(r'<pre class="ocx-join-token">([^<]+)</pre>', page)
    return (shown.group(1) if shown else None), page


def join_token(name: str, by: str | None = None) -> dict:
    node = server()
    token, page = join_token_through_page((node.logins[by] if by else node.admin).web(node.url), name)
    refused = next(iter(re.findall(r'id="join-refused">([^<]*)<', page)), None)
    return {"token": token, "refused": refused}


def join_tokens() -> dict:
    from ocx.page.join_tokens import tokens_dir

    directory = tokens_dir(server().config.repository)
    files = sorted(directory.glob("*")) if directory.exists() else []
    return {"dir_mode": oct(directory.stat().st_mode & 0o777) if directory.exists() else None,
            "files": [[p.name, oct(p.stat().st_mode & 0o777), p.read_text()] for p in files]}


def build_join(name: str, url: str, token_file: str) -> dict:
    done = ocx("node", "init", "--name", name, "--server", url, "--token-file", token_file, check=False)
    return {"exit": done.returncode, "out": done.stdout, "err": done.stderr,
            "state_left": Path(f"/var/lib/ocx/{name}").exists(), "config_left": Path(f"/etc/ocx/{name}.json").exists()}


def template(*hashes: str) -> dict:
    from ocx.fossil.repository import Repository
    from ocx.node import config as node_config
    from ocx.node.template import held, template_path

    config = node_config.load(BUILD)
    with Repository(config.repository) as repository:
        return {"held": held(template_path(config)), "newest": repository.max_rcvid(),
                "holding": sorted(repository.holding(list(hashes)))}


def quiet(name: str) -> dict:
    subprocess.run(["systemctl", "stop", f"ocx-follow@{name}.service"], check=False)
    return {"follower": active(f"ocx-follow@{name}.service")["ActiveState"]}


def build_init(url: str, password_file: str) -> dict:
    done = ocx("node", "init", "--name", BUILD, "--server", url, "--admin-password-file", password_file)
    return {"said": done.stdout, **code()}


def code(name: str = BUILD) -> dict:
    from ocx.fossil.repository import Repository
    from ocx.node import config as node_config

    with Repository(node_config.load(name).repository) as repository:
        return {"server_code": repository.server_code}


def active(unit: str) -> dict:
    done = subprocess.run(["systemctl", "show", unit, "-p", "ActiveState,SubState,ExecMainStartTimestamp"],
                          capture_output=True, text=True)
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def started(unit: str) -> dict:
    """When systemd began the unit's job, and when its program started (after its preparation)."""
    from datetime import datetime, timezone

    def stamp(prop: str) -> float | None:
        value = subprocess.run(["systemctl", "show", unit, "-p", prop, "--value", "--timestamp=us+utc"],
                               capture_output=True, text=True).stdout.strip()
        if not value or value == "n/a":
            return None
        return datetime.strptime(value, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=timezone.utc).timestamp()

    return {"unit": stamp("InactiveExitTimestamp"), "program": stamp("ExecMainStartTimestamp")}


def steps(unit: str, record: str) -> dict:
    """The way from the node's pass to the program, for bench/elsewhere.py: when the node logged
    starting UNIT, and its preparation's mark (its end, how long it and its run user's grant took)."""
    logged = subprocess.run(["journalctl", "-u", f"ocx-node@{BUILD}.service", "-o", "json", "--no-pager"],
                            capture_output=True, text=True).stdout.splitlines()
    decided = [int(entry["__REALTIME_TIMESTAMP"]) / 1e6 for entry in map(json.loads, logged)
               if str(entry.get("MESSAGE", "")).startswith(f"started {unit} ")]
    marks = sorted(Path(f"/var/lib/ocx/{BUILD}/records/{record}").glob("prepared-*.json"))
    prepared = json.loads(marks[0].read_text()) if marks else {}
    followed = subprocess.run(["journalctl", "-u", f"ocx-follow@{BUILD}.service", "-o", "json", "--no-pager"],
                              capture_output=True, text=True).stdout.splitlines()
    handed = [int(entry["__REALTIME_TIMESTAMP"]) / 1e6 for entry in map(json.loads, followed)
              if "handed over" in str(entry.get("MESSAGE", ""))]
    return {"decided": decided[0] if decided else None, "prepared": prepared, "handed": handed}


def idle(name: str) -> dict:
    from tests.node_system.harness import node_idle

    return {"idle": node_idle(name)}


def receipt(hash_: str) -> dict:
    with server().repository() as repository:
        return {"at": repository.sender(hash_).time.timestamp()}


def unit_journal(unit: str) -> dict:
    return {"journal": journal(unit)[-8000:]}


def mentions(unit: str, text: str) -> dict:
    return {"count": journal(unit).count(text)}


STEPS = {"server-init": server_init, "login": login, "post": post, "reply": reply, "stop": stop,
         "answers": answers, "letters": letters, "status": status, "sql": sql, "build-init": build_init,
         "active": active, "journal": unit_journal, "mentions": mentions, "code": code, "started": started, "steps": steps, "receipt": receipt,
         "idle": idle,
         "commit": commit, "tags": tags, "give": give, "ticket": ticket, "forged-ticket": forged_ticket,
         "lost": lost, "checkin-sender": checkin_sender, "ticket-answers": ticket_answers,
         "join-token": join_token, "join-tokens": join_tokens, "build-join": build_join, "quiet": quiet,
         "template": template}

if __name__ == "__main__":
    print(json.dumps(STEPS[sys.argv[1]](*sys.argv[2:])))
    _ = PYTHON
