"""The preview of the staged release at /ext/ocx-next (D46) and the smoke's status step (D45), with the
real node, its Fossil server, systemd and the build unit: a wheel of the working tree staged into a
releases' root of the test's, whose ext program (as `ocx node init` writes it, for that root) runs
root's copy of `next` as the Fossil server's account. The page says it is a preview of that release,
answers from the staged code itself, and writes nothing whatever is posted through it; with nothing
staged it answers 404; a release whose page cannot answer `status` is not offered."""
from __future__ import annotations

import html
import json
import os
import re
import secrets
import sqlite3
from pathlib import Path

import pytest

from ocx.node import config as node_config
from ocx.node.releases.preview import PREVIEWS, PROGRAM, preview_program
from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .release_wheels import working_tree_wheel
from .test_releases_stage import fresh_root, release, shown

pytestmark = pytest.mark.systemd

SRC = Path("/src")


def blobs(node) -> int:
    db = sqlite3.connect(f"file:{node.config.repository}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM blob").fetchone()[0]
    finally:
        db.close()


def preview_of(node, root: str) -> str:
    """An ext program for ROOT beside the node's own /ext/ocx-next (its text for the node's root is
    checked below): /ext/ocx-next-TOKEN."""
    name = f"{PROGRAM}-{secrets.token_hex(3)}"
    program = node.config.extroot / name
    program.write_text(preview_program(str(node_config.config_path(node.name)), root))
    program.chmod(0o755)
    return f"/ext/{name}"


@pytest.fixture(scope="module")
def staged(node, tmp_path_factory):
    if not Path(WHEELHOUSE_INSIDE).is_dir():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE_INSIDE}: tests/container/build-image.sh makes it on the host")
    root = fresh_root()
    page = preview_of(node, root)
    wheel = working_tree_wheel(SRC, tmp_path_factory.mktemp("wheels"))
    done = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, root=root)
    yield root, page, done.stdout.strip().splitlines()[-1].removeprefix("next: ")
    os.unlink(node.config.extroot / page.removeprefix("/ext/"))


def test_init_installs_the_preview_for_the_nodes_own_root(node):
    program = node.config.extroot / PROGRAM
    assert program.read_text() == preview_program(str(node_config.config_path(node.name)))
    assert os.stat(program).st_uid == 0 and os.stat(program).st_mode & 0o777 == 0o755


def test_with_nothing_staged_the_preview_answers_404_saying_so(node):
    root = fresh_root()
    os.makedirs(root, 0o755)
    page = node.admin.web(node.url).get(preview_of(node, root))
    assert page.status == 404 and "Nothing is staged on this node" in page.text, (page.status, page.text)


def test_the_smokes_status_step_is_recorded(node, staged):
    root, _, release_id = staged
    smoke = shown(root)["next"]["smoke"]
    assert smoke["status"].startswith("passed: "), smoke  # each node's here: this one's among them
    assert f"status answered nobody on node {node.server_code[:16]}" in smoke["status"], smoke
    assert sorted(os.listdir(f"{root}/{PREVIEWS}")) == [release_id]  # root's own copy, what the preview runs
    assert os.stat(f"{root}/{PREVIEWS}/{release_id}/bin").st_uid == 0


def test_the_smokes_node_check_step_is_recorded(node, staged):
    """The staged release's node read this node's live configuration as at its start, against the copy
    of its repository: its server-code, its node user's letters, its runner pages (D45)."""
    root, _, _ = staged
    smoke = shown(root)["next"]["smoke"]
    assert smoke["node_check"].startswith("passed: "), smoke
    assert f"node {node.server_code[:16]} ({node.name}) read as at its start" in smoke["node_check"], smoke
    assert f"node user {node.config.node_user} holds " in smoke["node_check"], smoke


def test_the_preview_names_the_release_and_answers_from_its_code(node, staged):
    root, page, release_id = staged
    checkin = shown(root)["next"]["checkin"]
    web = node.admin.web(node.url)
    drawn = web.get(page).text
    assert 'id="ocx-preview"' in drawn and release_id in drawn and checkin in drawn, drawn[-3000:]
    said = web.page_json(f"{page}?json")
    assert said["preview"] == {"release": release_id, "checkin": checkin}
    # status answered in the preview's own process, from root's copy of the staged release (D46):
    # not through the page service of the node's own page, whose code is the installation's
    status = web.page_json(f"{page}?json", {"tool": "status", "input": {}, "token": said["token"]})
    assert status["stopped"] is None and status["result"]["release"] == release_id, status
    own = web.page_json("/ext/ocx?json", {"tool": "status", "input": {}, "token": said["token"]})
    assert own["result"]["release"] is None and "preview" not in own, own


def test_a_tool_posted_through_the_preview_writes_nothing_and_says_dry_run(node, staged):
    _, page, _ = staged
    web = node.admin.web(node.url)
    thread = web.new_thread("Preview", "A thread to reply to.")
    token = web.page_json(f"{page}?json")["token"]
    before = blobs(node)
    called = web.page_json(f"{page}?json", {"tool": "post", "token": token, "input": {
        "to": thread, "text": "Through the preview.", "dry_run": False}})
    assert called["dry_run"] is True and called["stopped"] is None and called["result"] is None, called
    assert any(step["kind"] == "would_write" for step in called["log"]), called
    form = web.post(page, {"tool": "post", "to": thread, "text": "Through the preview's form.",
                           "dry_run": "false", "token": token}).text
    shown_answer = re.search(r'<pre class="ocx-answer">(.*?)</pre>', form, re.DOTALL)
    assert shown_answer, form[-3000:]
    answered = json.loads(html.unescape(shown_answer.group(1)))
    assert answered["dry_run"] is True and answered["result"] is None, answered
    assert blobs(node) == before


def test_a_release_whose_page_cannot_answer_status_is_not_offered(node, tmp_path):
    root = fresh_root()
    broken = b"\n\ndef _broken(self, act, given):\n    raise RuntimeError('this page answers no status')\n" \
             b"\n\nStatusTool.act = _broken\n"
    wheel = working_tree_wheel(SRC, tmp_path, appended={"ocx/tools/status.py": broken})
    refused = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, root=root, check=False)
    assert refused.returncode == 1 and "smoke: status failed: exit 1" in refused.stderr, refused
    assert "this page answers no status" in refused.stderr, refused.stderr
    assert shown(root)["next"] is None and os.listdir(f"{root}/staged") == []
    assert not os.path.exists(f"{root}/{PREVIEWS}")
    assert json.loads(release("show", "--json", root=root).stdout)["next"] is None


def test_a_release_whose_node_cannot_start_on_the_configuration_is_not_offered(node, tmp_path):
    """Its page answers `status`; its node, reading the configuration as at its start, fails: not staged."""
    root = fresh_root()
    broken = b"\n\ndef _broken(cls, config):\n    raise RuntimeError('this node cannot start')\n" \
             b"\n\nNodeContext.load = classmethod(_broken)\n"
    wheel = working_tree_wheel(SRC, tmp_path, appended={"ocx/node_service/context.py": broken})
    refused = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, root=root, check=False)
    assert refused.returncode == 1 and "smoke: node_check failed: exit 1" in refused.stderr, refused
    assert "this node cannot start" in refused.stderr, refused.stderr
    assert shown(root)["next"] is None and os.listdir(f"{root}/staged") == []
