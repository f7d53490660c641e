"""The preview's page (page/preview.py, D46) as an ext program of a real `fossil server`, with this
test's OCX standing for the staged release: every page names the release and its check-in, and
whatever is posted through it, a form or a JSON call, nothing is written: each tool is run as a dry
run by the page itself, and every other change (a node elsewhere's, a join token) is refused. Its
run from root's copy of `next` is tests/node_system/test_release_preview.py's."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import ocx

from .conftest import remove_state, serve_with_page
from .test_web_page import AN_HOUR, _page_answer

RELEASE = "c" * 16 + "-" + "d" * 16
CHECKIN = "c" * 64


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    served, node = serve_with_page(tmp_path_factory.mktemp("preview"), "preview-test")
    served.clone("admin").write_wiki("sandbox/claude", '```json\n{"command": ["/bin/true"]}\n```\n')
    config_file = next((served.work / "etc").glob("*.json"))
    source = Path(ocx.__file__).resolve().parent.parent
    driver = (f"import sys; sys.path.insert(0, {str(source)!r}); from ocx.page.preview import main; "
              f"from ocx.page.web_viewer import Preview; sys.exit(main([{str(config_file)!r}], "
              f"Preview({RELEASE!r}, {CHECKIN!r})))")
    program = served.work / "ext" / "ocx-next"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -I -B -c \"{driver}\"\n")
    program.chmod(0o755)
    try:
        yield served
    finally:
        served.server.stop()
        remove_state(node)


def blobs(site) -> int:
    return site.sql("SELECT count(*) FROM blob")[0][0]


def token_of(web) -> str:
    found = re.search(r'name="token" value="([0-9a-f]{64})"', web.get("/ext/ocx-next").text)
    assert found, "the preview's forms carry no token"
    return found.group(1)


def test_every_page_names_the_release_and_its_checkin(site):
    page = site.web("admin").get("/ext/ocx-next").text
    banner = re.search(r'<p class="ocx-preview" id="ocx-preview">(.*?)</p>', page, re.DOTALL)
    assert banner and RELEASE in banner.group(1) and CHECKIN in banner.group(1), page[:3000]
    assert "dry run" in banner.group(1)
    assert page.index('id="ocx-preview"') < page.index('class="ocx-strip"')  # first, above all else
    # forms post back to the preview, never to /ext/ocx
    actions = re.findall(r'<form method="POST" action="([^"]*)"', page)
    assert actions and all(action.split("#")[0].endswith("/ext/ocx-next") for action in actions), actions
    said = site.web("admin").page_json("/ext/ocx-next?json")
    assert said["preview"] == {"release": RELEASE, "checkin": CHECKIN} and said["login"] == "admin"


def test_a_form_posted_through_the_preview_is_a_dry_run_and_writes_nothing(site):
    web = site.web("admin")
    before = blobs(site)
    page = web.post("/ext/ocx-next", {"tool": "create", "objective": "From the preview.", **AN_HOUR,
                                      "dry_run": "false", "token": token_of(web)}).text
    answer = _page_answer(page)
    assert answer["dry_run"] is True and answer["stopped"] is None and answer["result"] is None, answer
    assert [step["kind"] for step in answer["log"]].count("would_write") >= 1, answer
    assert 'id="ocx-preview"' in page
    assert blobs(site) == before


def test_a_json_call_through_the_preview_is_a_dry_run_and_writes_nothing(site):
    web = site.web("admin")
    before = blobs(site)
    token = web.page_json("/ext/ocx-next?json")["token"]
    called = web.page_json("/ext/ocx-next?json", {"tool": "create", "token": token, "input": {
        "objective": "x", "budget": {"wall": "1h"}, "dry_run": False}})
    assert called["dry_run"] is True and called["stopped"] is None and called["preview"]["release"] == RELEASE, called
    assert any(step["kind"] == "would_write" for step in called["log"]), called
    # without the token it is refused as on /ext/ocx (D43)
    refused = web.page_json("/ext/ocx-next?json", {"tool": "create", "input": {"objective": "x",
                                                                               "budget": {"wall": "1h"}}})
    assert refused["stopped"]["field"] == "caller" and "D43" in refused["stopped"]["why"], refused
    assert blobs(site) == before


def test_every_other_change_through_the_preview_is_refused(site):
    web = site.web("admin")
    before = blobs(site)
    token = token_of(web)
    joined = web.post("/ext/ocx-next", {"form": "join-token", "name": "elsewhere", "token": token}).text
    assert "it changes nothing (D46)" in joined, joined[-3000:]
    for op, sent in (("register", {"token": token, "name": "elsewhere"}), ("self", None)):
        node = web.page_json(f"/ext/ocx-next?json&node={op}", sent)  # nodes elsewhere: none through a preview
        assert node["refused"]["field"] == "node" and "preview of the staged release" in node["refused"]["why"], node
    assert blobs(site) == before
