"""Every tool, every way in, from a host that is not the node's (D22; docs/tools.md, 'Where a tool runs').

The node runs in the systemd container (`ocx node init`); its Fossil server
is published on this host's 127.0.0.1 (conftest.py, web_node_inside.py).
The person sits on this host with their own clone, made as people make one
(`fossil clone --save-http-password URL FILE`), and acts out the spec's
scenario through the README's own commands, `ocx TOOL --clone me.fossil …`
and `ocx mcp` from this host: an admin sets up a reviewer on trunk and a
fixer restricted to `fixes` with no password; the reviewer's verdict and its
reply land as its user; the fixer's push lands on `fixes` and its push on
another branch is refused; another person, no admin, is refused `create`
and `stop` before anything is written; the admin stops both; a `stop lost`
on an answered record is refused. Each record is answered by the node, and
each artifact's sender and content are read with SQL on the node.
"""
from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ocx.fossil.sync import CallerClone
from ocx.protocol import find_message

from .conftest import inside
from .test_ways_in import ocx_path
from .web_node_inside import AGENT_RUNNER

SENDER = ("SELECT u.login FROM blob b JOIN rcvfrom r ON r.rcvid=b.rcvid JOIN user u ON u.uid=r.uid "
          "WHERE b.uuid=?")


@pytest.fixture(scope="module")
def person(webnode, tmp_path_factory) -> dict:
    """The admin on their own machine: a clone of their own, a password file."""
    home = tmp_path_factory.mktemp("pat")
    clone = CallerClone.create(home / "me.fossil", webnode["url"], webnode["login"], webnode["password"],
                               home=home / "fossil-home", save_password=True)
    password = home / "pw"
    password.write_text(webnode["password"] + "\n")
    return {"home": home, "clone": clone, "pw": password}


def ocx(person: dict, *args: str, clone: Path | None = None, pw: Path | None = None) -> dict:
    """`ocx TOOL --clone me.fossil --password-file pw …`, as the README shows it, in the person's home."""
    where = ["--clone", str(clone or person["clone"].path), "--password-file", str(pw or person["pw"])]
    done = subprocess.run([ocx_path(), *args, *where, "--json"], capture_output=True, text=True, timeout=180,
                          cwd=person["home"])
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def by_mcp(person: dict, calls: list[tuple[str, dict]]) -> list[dict]:
    """`ocx mcp --clone me.fossil --password-file pw` from this host, driven by the SDK's client."""
    params = StdioServerParameters(command=ocx_path(), args=["mcp", "--clone", str(person["clone"].path),
                                                             "--password-file", str(person["pw"])])

    async def talk():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [json.loads((await session.call_tool(tool, raw)).content[0].text) for tool, raw in calls]

    return anyio.run(talk)


def sql(container, query: str, *args: str) -> list[list]:
    return inside(container, "sql", query, *args)["rows"]


def sender(container, hash_: str) -> str | None:
    rows = sql(container, SENDER, hash_)
    return rows[0][0] if rows else None


def waited(container, what: str, check, timeout: float = 240.0, units: tuple[str, ...] = ()):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {u} ---\n{inside(container, 'journal', u)['journal']}" for u in units)
            raise AssertionError(f"no {what} in {timeout} s\n{logs}")
        time.sleep(1)
    return found


def responses(container, record: str) -> list[list]:
    return inside(container, "answers", record)["responses"]


def unit(webnode, record: str) -> str:
    return f"ocx-{webnode['server_code'][:12]}-{record[:12]}.service"


def test_a_reviewer_and_a_fixer_from_another_host(node_in_container, webnode, person):
    container, admin = node_in_container, webnode["login"]
    status = ocx(person, "status")
    assert status["stopped"] is None, status
    assert status["result"]["node"] == webnode["server_code"] and status["result"]["on_node"] is True
    assert status["result"]["enforces"] == ["branch", "no_password", "own_thread"]
    assert "a" in status["result"]["capabilities"] and status["result"]["login"] == admin

    checkout = person["clone"].open_checkout(person["home"] / "checkout")
    (checkout / "PLAN.md").write_text("Everything documented.\n")
    work = person["clone"].commit(checkout, "work to review")
    reviewer, fixer = f"reviewer-{secrets.token_hex(3)}", f"fixer-{secrets.token_hex(3)}"

    made = ocx(person, "create", "--runner", AGENT_RUNNER, "--user", reviewer, "--objective", f"review {work[:12]} noscan",
               "--checkins", '["trunk"]', "--hears", json.dumps([admin]), "--budget", '{"wall": "4h"}')
    assert made["stopped"] is None, made
    review = made["result"]
    (fixing,) = by_mcp(person, [("create", {"runner": AGENT_RUNNER, "user": fixer, "objective": "fix noscan",
                                            "hears": [admin, reviewer], "budget": {"wall": "4h"},
                                            "restrict": {"no_password": True, "branch": "fixes"}})])
    assert fixing["stopped"] is None, fixing
    fix = fixing["result"]
    for record, user in ((review, reviewer), (fix, fixer)):  # each names the node, never the person's clone
        written = inside(container, "post", record)
        message = find_message(written["body"])
        assert written["sender"] == admin and (message["node"], message["user"]) == (webnode["server_code"], user)
        assert message["hears"] == ([admin] if user == reviewer else [admin, reviewer])
    assert find_message(inside(container, "post", fix)["body"])["restrict"] == {"no_password": True, "branch": "fixes"}

    # the reviewer's verdict, as its user, against its record
    tags = waited(container, "a verdict by the reviewer", lambda: [
        tag for tag in inside(container, "tags", work)["tags"] if tag[2] == reviewer], units=(unit(webnode, review),))
    assert tags == [["audited", f"pass: reads well (against {review})", reviewer]], tags
    # from inside its run it asked the node's page who and where it is: the node's answer, its record
    (said,) = [json.loads(line[len("tool status "):]) for line in inside(container, "journal", unit(webnode, review))[
        "journal"].splitlines() if line.startswith("tool status ")]
    assert said["result"]["node"] == webnode["server_code"] and said["result"]["run"]["record"] == review, said

    # a question in its thread, from this host; its answer, as the reviewer, in the same thread
    asked = ocx(person, "post", "--to", review[:10], "--text", "Is it good?")
    assert asked["stopped"] is None and sender(container, asked["result"]) == admin
    replies = waited(container, "the reviewer's reply", lambda: [
        row for row in sql(container, "SELECT b.uuid FROM forumpost f JOIN blob b ON b.rid=f.fpid")
        if sender(container, row[0]) == reviewer], units=(unit(webnode, review),))
    for (reply,) in replies:
        written = inside(container, "post", reply)
        assert (written["root"], written["body"].strip()) == (review, "answer: it reads well")

    # the fixer's push lands on fixes, as the fixer; its push from trunk does not
    landed = waited(container, "the fixer's check-in", lambda: [
        row for row in sql(container, "SELECT b.uuid, x.value FROM blob b JOIN event e ON e.objid=b.rid "
                                      "JOIN tagxref x ON x.rid=b.rid JOIN tag t ON t.tagid=x.tagid "
                                      "WHERE e.type='ci' AND t.tagname='branch'") if sender(container, row[0]) == fixer],
        units=(unit(webnode, fix), f"ocx-tools@{webnode['name']}.service"))
    assert [branch for _, branch in landed] == ["fixes"]
    journal = waited(container, "the fixer's second push", lambda: (
        text := inside(container, "journal", unit(webnode, fix))["journal"]).count("tool push ") >= 2 and text)
    second = json.loads([line for line in journal.splitlines() if line.startswith("tool push ")][1][len("tool push "):])
    assert second["stopped"]["field"] == "branch", second
    assert len(landed) == 1  # nothing of trunk arrived

    # the person judges the fixer's check-in from here
    judged = ocx(person, "audit", "--checkin", landed[0][0][:12], "--verdict", "pass", "--reason", "small and right",
                 "--against", "PLAN.md")
    assert judged["stopped"] is None and sender(container, judged["result"]) == admin

    # another person, without admin: refused before anything is written
    sam = inside(container, "login", f"sam{secrets.token_hex(2)}", "i4")
    sam_home = person["home"] / "sam"
    sam_clone = CallerClone.create(sam_home / "sam.fossil", webnode["url"], sam["login"], sam["password"],
                                   home=sam_home / "fossil-home", save_password=True)
    sam_pw = sam_home / "pw"
    sam_pw.write_text(sam["password"] + "\n")
    before = sql(container, "SELECT count(*), max(rcvid) FROM blob")
    for tool, args in (("create", ["--objective", "o", "--budget", '{"wall": "1h"}']), ("stop", ["--record", review])):
        refused = ocx(person, tool, *args, clone=sam_clone.path, pw=sam_pw)
        assert refused["stopped"]["field"] == "caller" and "admin or setup" in refused["stopped"]["why"], refused
    assert sql(container, "SELECT count(*), max(rcvid) FROM blob") == before

    # the admin stops both, one from the command line and one over MCP; the node answers each
    stopped = ocx(person, "stop", "--record", review[:12])
    assert stopped["stopped"] is None and sender(container, stopped["result"]) == admin
    (stopped_fix,) = by_mcp(person, [("stop", {"record": fix})])
    assert stopped_fix["stopped"] is None, stopped_fix
    for record in (review, fix):
        answered = waited(container, f"the node's response to {record[:12]}", lambda: responses(container, record))
        assert answered == [["stopped", webnode["node_user"]]]
    # answered: a stop, or a lost answer by hand, is refused (C4, D31)
    for extra in ([], ["--lost"]):
        again = ocx(person, "stop", "--record", review, *extra)
        assert again["stopped"]["field"] == "record" and "already answered stopped" in again["stopped"]["why"]
