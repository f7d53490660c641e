"""Release requests on the record (D46), with the real node, its Fossil server and systemd: an admin's
`release` tool call writes a request in the node's releases thread as the admin; the node, as root,
accepts and rolls back in a unit of its own and answers each in the thread as the node user, naming
the check-in, digest, node, login, time and smoke; a request from a login without admin or setup,
or a malformed one, is refused naming the field and nothing moves; a request is acted on once,
through a restart of the node and a second run of its command. The command line's own steps on the
node post there too."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from ocx.node.cut import CUT_ROOT
from ocx.node.host_paths import RELEASES_DIRECTORY
from ocx.protocol.release_request import answer_object, thread_title
from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .battery import Committer, ocx_tree, passed_checkin
from .harness import PYTHON, Node, back_on_the_installation, journal, ocx, systemctl, wait_for
from .release_wheels import working_tree_wheel

pytestmark = pytest.mark.systemd

SRC = Path("/src")
BUILD_SECONDS = 900
ANSWER_SECONDS = 300  # the request's unit copies a whole release at accept, on a busy 2-core machine


def release(*args: str, check: bool = True):
    return ocx("release", *args, check=check, timeout=BUILD_SECONDS)


def links() -> dict:
    return json.loads(release("show", "--json").stdout)


def named(link: str) -> str | None:
    return (links()[link] or {}).get("release")


def the_thread(node: Node) -> str:
    from ocx.node.releases.thread import releases_thread

    with node.repository() as repository:
        root = releases_thread(repository, node.name, node.config.node_user)
    assert root is not None, "no releases thread"
    return root


def answers(node: Node, to: str) -> list[tuple[dict, str | None]]:
    """The node's answers in reply to post TO, each with its sender (rcvfrom)."""
    with node.repository() as repository:
        found = [(answer_object(post.body), post.sender.login) for post in repository.thread(the_thread(node))
                 if post.in_reply_to == to]
    return [(facts, sender) for facts, sender in found if facts is not None]


def answer(node: Node, to: str) -> dict:
    got = wait_for(lambda: answers(node, to), ANSWER_SECONDS, 0.5, f"the node's answer to {to[:12]}")
    assert len(got) == 1, got
    facts, sender = got[0]
    assert sender == node.config.node_user, f"answered by {sender}"
    return facts


def tool(node: Node, login, raw: dict) -> dict:
    from ocx.tools.caller import Caller
    from ocx.tools.framework import run_tool
    from ocx.tools.registry import TOOLS

    caller = Caller(login.name, Path(node.config.repository), node.config.url, node=node.config,
                    password=login.password)
    return run_tool(TOOLS["release"], raw, caller).model_dump(mode="json")


@pytest.fixture(scope="module")
def staged_twice(node, tmp_path_factory):
    """The node's own root: a release accepted from its command line, a second staged as next; removed after."""
    if not Path(WHEELHOUSE_INSIDE).is_dir():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE_INSIDE}: tests/container/build-image.sh makes it on the host")
    assert not os.path.exists(RELEASES_DIRECTORY), "the node's releases' root is another test's"
    wheels = tmp_path_factory.mktemp("wheels")
    wheel = working_tree_wheel(SRC, wheels)
    try:
        release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, "--node", node.name)
        first = named("next")
        release("accept", "--node", node.name)
        again = next(Path(f"{RELEASES_DIRECTORY}/current/wheels").glob("ocx-*.whl"))
        release("stage", "--wheel", str(again), "--node", node.name)
        second = named("next")
        assert first and second and first != second and named("current") == first
        yield first, second
    finally:
        back_on_the_installation()


def test_the_command_lines_steps_are_posted_by_the_node_user(node, staged_twice):
    first, second = staged_twice
    with node.repository() as repository:
        posts = repository.thread(the_thread(node))
    told = [(answer_object(p.body), p.sender.login, p.title) for p in posts]
    assert told[0][2] == thread_title(node.name) and all(sender == node.config.node_user for _, sender, _ in told)
    # the fixture's three steps are the thread's last (an earlier module's moves of this node come before)
    steps = [(facts["step"], facts["outcome"], facts["release"]) for facts, _, _ in told if facts]
    assert steps[-3:] == [("stage", "staged as next", first), ("accept", "accepted", first),
                          ("stage", "staged as next", second)], steps
    accepted = [facts for facts, _, _ in told if facts and facts["step"] == "accept"][-1]
    assert accepted["login"] == f"root@{socket.gethostname()}" and accepted["node"] == node.server_code
    assert accepted["checkin"] and accepted["digest"] and accepted["smoke"]["version"].startswith("passed")


def test_the_pages_account_reads_the_links_and_records_as_root_does(node, staged_twice):
    """`show` and the console's card run as the Fossil server's account, which cannot act as root but
    reads the releases' root (0755, records 0644): the same links, check-ins and smoke."""
    account = node.config.server_account
    read = subprocess.run(
        ["setpriv", f"--reuid={account}", f"--regid={account}", "--clear-groups", PYTHON, "-I", "-c",
         "import json; from ocx.node.releases.shown import described; "
         f"print(json.dumps(described({RELEASES_DIRECTORY!r})))"],
        capture_output=True, text=True, timeout=60, cwd="/")
    assert read.returncode == 0, read
    assert json.loads(read.stdout) == links()


def test_an_admins_request_is_accepted_and_rolled_back_by_the_node_and_answered(node, staged_twice):
    first, second = staged_twice
    shown = tool(node, node.admin, {"action": "show"})
    assert shown["stopped"] is None and shown["result"]["next"]["release"] == second, shown
    dry = tool(node, node.admin, {"action": "accept", "dry_run": True})
    assert dry["stopped"] is None and dry["result"] is None and dry["log"][-1]["kind"] == "would_write", dry
    asked = tool(node, node.admin, {"action": "accept"})
    assert asked["stopped"] is None, asked
    request = asked["result"]
    with node.repository() as repository:
        assert repository.post(request).sender.login == node.admin.name  # written as its caller (D21)
    facts = answer(node, request)
    assert (facts["step"], facts["outcome"], facts["release"], facts["login"]) == \
        ("accept", "accepted", second, node.admin.name), facts
    assert facts["node"] == node.server_code and facts["time"] and facts["checkin"] and facts["digest"]
    assert facts["smoke"]["version"].startswith("passed"), facts
    assert (named("current"), named("previous"), named("next")) == (second, first, None)

    back = tool(node, node.admin, {"action": "rollback"})
    assert back["stopped"] is None, back
    facts = answer(node, back["result"])
    assert (facts["step"], facts["outcome"], facts["release"]) == ("rollback", "rolled back", first), facts
    assert (named("current"), named("previous")) == (first, second)
    # nothing to accept now: the tool says so, naming the field, and writes nothing
    refused = tool(node, node.admin, {"action": "accept"})
    assert refused["stopped"]["field"] == "action" and refused["result"] is None, refused


def request_text(node: Node, step: str) -> str:
    return f"Please.\n\n```json\n{json.dumps({'ocx_release': step, 'node': node.server_code})}\n```\n"


def test_a_request_from_a_login_without_admin_or_setup_is_refused_and_nothing_moves(node, staged_twice):
    before = links()
    writer = node.login("relwriter", "i4")  # may post, holds neither a nor s
    assert tool(node, writer, {"action": "show"})["stopped"]["field"] == "caller"  # the tool refuses it first
    request = node.reply(the_thread(node), request_text(node, "rollback"), by=writer)  # so it writes one itself
    facts = answer(node, request)
    assert facts["outcome"] == "refused" and facts["why"].startswith("caller: relwriter"), facts
    assert facts["login"] == "relwriter"
    malformed = node.reply(the_thread(node), request_text(node, "explode"))
    facts = answer(node, malformed)
    assert facts["outcome"] == "refused" and facts["why"].startswith("ocx_release:"), facts
    assert links() == before
    assert not [line for line in systemctl("list-units", "--all", "--plain", "--no-legend").splitlines()
                if f"ocx-release-request-{request[:16]}" in line or f"ocx-release-request-{malformed[:16]}" in line]


def test_a_request_is_acted_on_once_through_a_restart_and_a_second_run_of_its_command(node, staged_twice):
    first, second = staged_twice
    if named("previous") is None:
        pytest.skip("needs the roll-back of the test before")
    current = named("current")
    asked = tool(node, node.admin, {"action": "rollback"})
    request = asked["result"]
    answer(node, request)
    moved = links()
    assert named("current") != current
    # The node loses its marks and restarts: the request, answered, is not acted on again ...
    shutil.rmtree(node.config.state_dir / "release-requests")
    systemctl("restart", f"ocx-node@{node.name}.service")
    node.barrier()  # a record answered after the restart: every receipt before it was read again
    # ... and its command, started again by hand as a restarted node would, acts on nothing
    again = release("rollback", "--request", request, "--node", node.name)
    assert "was acted on already" in again.stdout, again
    assert links() == moved and len(answers(node, request)) == 1


def test_a_stage_request_of_a_checkin_without_ci_is_refused_by_roots_gate(node, staged_twice):
    """The tool refuses it first (D25, D45); written by hand, the node's own command refuses it, named."""
    before = links()
    checkin = Committer(node, f"noci-{secrets.token_hex(2)}").commit({"a.txt": "no ci here\n"})
    assert tool(node, node.admin, {"action": "stage", "checkin": checkin})["stopped"]["field"] == "checkin"
    text = f"```json\n{json.dumps({'ocx_release': 'stage', 'node': node.server_code, 'checkin': checkin})}\n```\n"
    request = node.reply(the_thread(node), text)
    facts = answer(node, request)
    assert (facts["step"], facts["outcome"]) == ("stage", "refused") and "no counted ci verdict" in facts["why"], facts
    assert links() == before


@pytest.fixture(scope="module")
def passing_checkin(node, staged_twice) -> str:
    """A check-in of OCX's tree (its backend in the tree) that passed its CI: what a stage request may build."""
    return passed_checkin(node, f"relreq-{secrets.token_hex(2)}", ocx_tree(SRC))[0]


def building() -> bool:
    return bool(systemctl("list-units", "ocx-release-build-*", "--state=active", "--plain", "--no-legend").strip())


def started_again(node: Node, request: str) -> bool:
    """The node's journal says it started the request's unit again after it ended with no answer."""
    told = journal(f"ocx-node@{node.name}.service")
    return f"release request {request[:12]}: ocx-release-request-{request[:16]}.service ended with no answer" in told


def test_a_stage_request_killed_while_it_builds_is_answered_once_as_lost(node, staged_twice, passing_checkin):
    """A cut point of stage as a request (C4, D46): its unit killed while the build runs. The node starts it
    again; its command finds the claim, recovers the root, and answers once that nothing was offered (the
    stage of the test after this one stops the orphaned build and sweeps what it left)."""
    before = links()
    asked = tool(node, node.admin, {"action": "stage", "checkin": passing_checkin[:16]})
    assert asked["stopped"] is None, asked
    request = asked["result"]
    wait_for(building, 300, 0.2, "the request's build running")
    systemctl("kill", "--signal=SIGKILL", f"ocx-release-request-{request[:16]}.service")
    facts = answer(node, request)
    assert (facts["step"], facts["outcome"], facts["login"]) == ("stage", "lost", node.admin.name), facts
    assert "nothing was offered as next" in facts["why"], facts
    assert links() == before
    wait_for(lambda: started_again(node, request), 30, 0.5, "the node's word that it started the unit again")
    node.barrier()
    assert len(answers(node, request)) == 1  # never twice


def test_a_stage_request_is_built_once_through_a_restart_of_the_node_while_it_builds(node, staged_twice,
                                                                                      passing_checkin):
    """A check-in that passed its CI, asked by the admin: while its unit builds, the node forgets its mark and
    restarts; the request is built once, staged as next, and answered once (D46)."""
    checkin = passing_checkin
    asked = tool(node, node.admin, {"action": "stage", "checkin": checkin[:16]})
    assert asked["stopped"] is None, asked
    request = asked["result"]
    unit = f"ocx-release-request-{request[:16]}.service"
    wait_for(lambda: systemctl("show", unit, "-p", "ActiveState").strip() == "ActiveState=active", 120, 0.2,
             "the request's unit running")
    shutil.rmtree(node.config.state_dir / "release-requests")
    systemctl("restart", f"ocx-node@{node.name}.service")
    node.barrier()  # the restarted node read the thread again, the request unanswered or answered
    facts = answer(node, request)
    assert (facts["step"], facts["outcome"], facts["checkin"]) == ("stage", "staged as next", checkin), facts
    assert named("next") == facts["release"] and facts["login"] == node.admin.name
    staged = [line for line in subprocess.run(["journalctl", "-u", unit, "-o", "cat", "--no-pager"],
                                              capture_output=True, text=True).stdout.splitlines()
              if line.startswith("staged ")]
    assert len(staged) == 1, staged  # built once, whatever the restart did


# -- a request's accept and roll-back cut at each step (C4, D46; node/releases/once.py) --------------------

# Only while a release not yet accepted is made root's: "copy" when accept copies it out of staged/, never
# when it takes root's copy made at stage (preview/ID, links.py `accept`), as after a stage on the record.
CUT_COPYING = ("copy", "copied")
CUT_ACCEPT = ("begun", "intent", "current", "previous", "next", "links", "moved")
CUT_ROLLBACK = ("begun", "intent", "current", "previous", "links", "moved")


def cut_request(node: Node, action: str, point: str) -> tuple[str, dict]:
    """ACTION asked by the admin, its command killing itself with SIGKILL at POINT (a cut root writes in
    /run/ocx-cut, ocx/node/cut.py: never the request's to ask); the answer the node posts once."""
    asked_cut = Path(CUT_ROOT) / node.name
    Path(CUT_ROOT).mkdir(mode=0o700, exist_ok=True)
    asked_cut.write_text(f"release-{point}\n")
    try:
        asked = tool(node, node.admin, {"action": action})
        assert asked["stopped"] is None, asked
        facts = answer(node, asked["result"])
        assert not asked_cut.exists(), (f"release-{point} was never met", facts)
    finally:
        asked_cut.unlink(missing_ok=True)
    wait_for(lambda: started_again(node, asked["result"]), 30, 0.5, "the node's word that it started the unit again")
    return asked["result"], facts


def whole() -> None:
    """No link dangles, none names a half-made release, no move is left half done."""
    for link in ("current", "previous", "next"):
        path = Path(RELEASES_DIRECTORY) / link
        assert not path.is_symlink() or path.resolve().is_dir(), link
    assert not [p for p in os.listdir(RELEASES_DIRECTORY) if p.endswith((".partial", ".link", "moving.json"))]


def serving(node: Node) -> None:
    """The node's own service runs the release `current` names, by its directory (the launcher)."""
    wanted = f"{RELEASES_DIRECTORY}/{named('current')}/bin/python"

    def runs() -> bool:
        pid = systemctl("show", f"ocx-node@{node.name}.service", "-p", "MainPID", "--value").strip()
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == wanted
        except (OSError, ValueError):
            return False

    wait_for(runs, 120, 0.5, f"the node's service on {wanted}")


def ids() -> dict[str, str | None]:
    """The release each link names."""
    return {link: facts["release"] if facts else None for link, facts in links().items()}


def offered_anew(like: str) -> str:
    """A release not accepted before, staged as the build leaves one (files, a record naming its check-in
    and digest) from the files of LIKE (accepted) and one file more, and offered as next: so accept meets
    every step of the move again."""
    from ocx.node.releases.links import release_id
    from ocx.node.releases.staging import moving
    from ocx.node.releases.tree import copy_tree, tree_digest

    staged = Path(RELEASES_DIRECTORY) / "staged"
    building = staged / f"building-{secrets.token_hex(4)}"
    copy_tree(f"{RELEASES_DIRECTORY}/{like}", str(building))
    (building / f"anew-{building.name}.txt").write_text("a release like another, one file more\n")
    record = json.loads((staged / f"{like}.json").read_text())
    digest = tree_digest(str(building))
    release = release_id(record["checkin"], digest)
    building.rename(staged / release)
    (staged / f"{release}.json").write_text(json.dumps({**record, "digest": digest}))
    with moving(RELEASES_DIRECTORY) as releases:
        releases.offer(release)
    return release


def test_a_request_killed_at_each_step_of_accept_and_rollback_is_completed_or_undone_and_answered_once(
        node, staged_twice):
    asked: list[str] = []
    fresh = named("next")
    if fresh is not None and not (Path(RELEASES_DIRECTORY) / fresh).is_dir():
        made_at_stage = (Path(RELEASES_DIRECTORY) / "preview" / fresh).is_dir()
        for point in CUT_COPYING[1:] if made_at_stage else CUT_COPYING:  # killed while it copies: undone
            before = ids()
            request, facts = cut_request(node, "accept", point)
            asked.append(request)
            assert (facts["outcome"], facts["login"]) == ("lost", node.admin.name), (point, facts)
            assert ids() == before, point
            whole()
    for point in CUT_ACCEPT:
        if named("next") is None:
            offered_anew(named("current"))
        before = ids()
        request, facts = cut_request(node, "accept", point)
        asked.append(request)
        whole()
        if point == "begun":  # killed before the move: nothing moved, and it says so
            assert facts["outcome"] == "lost" and "nothing moved" in facts["why"], (point, facts)
            assert ids() == before, point
        else:  # the intent written: the move completed, the services moved onto it
            assert (facts["outcome"], facts["release"]) == ("accepted", before["next"]), (point, facts)
            assert ids() == {**before, "current": before["next"], "previous": before["current"], "next": None}
        serving(node)
    for point in CUT_ROLLBACK:
        before = ids()
        request, facts = cut_request(node, "rollback", point)
        asked.append(request)
        whole()
        if point == "begun":
            assert facts["outcome"] == "lost" and "nothing moved" in facts["why"], (point, facts)
            assert ids() == before, point
        else:
            assert (facts["outcome"], facts["release"]) == ("rolled back", before["previous"]), (point, facts)
            assert ids() == {**before, "current": before["previous"], "previous": before["current"]}
        serving(node)
    node.barrier()  # every request read again since: none answered twice
    assert [len(answers(node, request)) for request in asked] == [1] * len(asked)
