"""The console (docs/console.md) as an ext program of a real `fossil server`, over
HTTP: everything drawn from the repository is escaped (hostile objectives,
notes, branch names, logins, comments, posts, verdicts), each section shows
only what the viewer's capabilities read, and the script's two reads
(`?part=work`, `?output=`) answer as the page does. No systemd here: the
page says so and shows the rest. Chromium against a real node is
test_console_on_node.py's."""
from __future__ import annotations

import html.parser
import json
import re
import secrets

import pytest

from ocx.fossil import admin as fossil_admin

from .conftest import remove_state, serve_with_page

pytestmark = pytest.mark.fossil

NODE_USER = "ocx-node"
EVE = '"><svg onload=alert(1)>'  # a login holding admin, with a hostile name
HOSTILE = {
    "objective": "<script>alert('objective')</script>",
    "note": "<img src=x onerror=alert('note')>",
    "branch": '"><b-onmouseover=alert(2)>',
    "comment": "</code><script>alert('comment')</script>",
    "question": "</pre><iframe src=javascript:alert('question')>",
    "reason": "\"'><script>alert('reason')</script>",
    "user": "<u onclick=alert('user')>",
}
# What the console's own markup is made of: anything else came from outside.
TAGS = {"div", "p", "b", "code", "span", "a", "nav", "section", "h2", "h3", "ul", "li", "ol", "article", "details",
        "summary", "pre", "table", "thead", "tbody", "tr", "th", "td", "form", "label", "select", "option", "input",
        "textarea", "button", "fieldset", "legend", "small", "abbr", "em", "dl", "dt", "dd", "style"}


def fenced(message: dict) -> str:
    return "A message.\n\n```json\n" + json.dumps(message) + "\n```\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    served, node = serve_with_page(tmp_path_factory.mktemp("console"), "console-test")
    try:
        for login, letters in ((NODE_USER, "4"), (EVE, "a")):
            served.passwords[login] = fossil_admin.create_user(served.path, login, letters, "x@example.org",
                                                               home=served.home)
        with served.repository() as repository:
            code = repository.server_code
        record = {"ocx": 1, "kind": "record", "node": code, "user": HOSTILE["user"], "runner": "claude",
                  "objective": HOSTILE["objective"], "checkins": [HOSTILE["branch"]], "hears": ["admin"],
                  "remote": False, "restrict": {}, "sandbox": {"network": True, "read_only": [], "read_write": []},
                  "budget": {"wall": "1h"}}
        eve = served.web(EVE)
        open_record = eve.new_thread("OCX record", fenced(record))
        ended = eve.new_thread("OCX record", fenced({**record, "user": f"run-{secrets.token_hex(3)}"}))
        served.web(NODE_USER).reply(ended, fenced({"ocx": 1, "kind": "response", "node": code, "answers": ended,
                                                   "outcome": "refused", "note": HOSTILE["note"]}))
        served.web("bob").reply(open_record, HOSTILE["question"])
        checkin = served.commit("alice", "work.txt", "work\n", branch=HOSTILE["branch"])
        served.commit("alice", "more.txt", "more\n")  # on trunk: its comment is the file's
        served.clone("bob").tag(checkin, "audited", f"pass: {HOSTILE['reason']} (against PLAN.md)")
        yield {"served": served, "open": open_record, "ended": ended, "checkin": checkin}
    finally:
        served.server.stop()
        remove_state(node)


class Markup(html.parser.HTMLParser):
    """The tags and attributes inside the console's own element."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.tags, self.handlers = 0, set(), []

    def handle_starttag(self, tag, attrs):
        if self.depth or dict(attrs).get("id") == "ocx-console":
            self.depth += tag not in ("input", "br", "img", "meta")
            self.tags.add(tag)
            self.handlers += [name for name, _ in attrs if name.startswith("on")]

    def handle_endtag(self, tag):
        if self.depth and tag not in ("input", "br", "img", "meta"):
            self.depth -= 1


def console_markup(page: str) -> Markup:
    parsed = Markup()
    parsed.feed(page)
    return parsed


def test_everything_drawn_from_the_repository_is_escaped(site):
    planted = console_markup('<div id="ocx-console"><p><img src=x onerror=alert(1)></p></div>')
    assert planted.tags == {"div", "p", "img"} and planted.handlers == ["onerror"]  # what the check catches
    served = site["served"]
    page = served.web(EVE).get(f"/ext/ocx?branch={HOSTILE['branch']}").text
    found = console_markup(page)
    assert found.tags <= TAGS and not found.handlers, (found.tags - TAGS, found.handlers)
    for name, hostile in HOSTILE.items():
        if name == "comment":
            continue
        assert hostile not in page, name
    for name in ("objective", "note", "question", "user"):  # each shown, as text
        assert html_escape(HOSTILE[name]) in page, name
    assert html_escape(EVE) in page  # the sender and the viewer
    assert html_escape(HOSTILE["branch"]) in page and html_escape(HOSTILE["reason"]) in page


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_a_viewer_sees_their_own_needs_you_and_no_one_elses(site):
    served = site["served"]
    eves = section(served.web(EVE).get("/ext/ocx").text, "needs-you")
    assert "refused" in eves and html_escape(HOSTILE["note"]) in eves and html_escape(HOSTILE["question"]) in eves
    admins = section(served.web("admin").get("/ext/ocx").text, "needs-you")
    assert "Nothing needs you now." in admins and "refused" not in admins


def section(page: str, ident: str) -> str:
    found = re.search(rf'<section id="{ident}">(.*?)</section>', page, re.S)
    assert found, f"no section {ident}"
    return found.group(1)


def test_each_section_shows_what_the_viewers_capabilities_read(site):
    served = site["served"]
    # dave holds `u`, the reader's letters: no forum (2), so no record in a thread is his to see.
    daves = served.web("dave").get("/ext/ocx").text
    assert site["open"] not in daves and site["ended"] not in daves
    admins = served.web("admin").get("/ext/ocx").text
    assert f'data-record="{site["open"]}"' in section(admins, "in-work") and site["ended"] in section(admins, "done")
    # No systemd on this host: said once, everything else still shown.
    assert "systemd could not be read here" in section(admins, "in-work")


def test_the_queue_marks_each_counted_verdict_and_the_checkins_with_none(site):
    served = site["served"]
    queue = section(served.web("admin").get("/ext/ocx?branch=trunk").text, "queue")
    assert "no verdict" in queue and "ocx-pass" not in queue
    queue = section(served.web("admin").get(f"/ext/ocx?branch={HOSTILE['branch']}").text, "queue")
    mark = re.search(r'<span class="ocx-verdict ocx-pass" title="([^"]*)"', queue)
    assert mark and "audited by bob" in mark.group(1) and "PLAN.md" in mark.group(1)
    assert site["checkin"][:12] in queue


def test_the_scripts_reads_answer_as_the_page_does(site):
    served = site["served"]
    work = served.web(EVE).get("/ext/ocx?part=work").text
    assert f'data-record="{site["open"]}"' in work and "<section" not in work and "fossil-doc" not in work
    refused = served.web("bob").page_json(f"/ext/ocx?output={site['open']}")
    assert refused["lines"] == [] and "admin or setup" in refused["why"]
    asked = served.web("admin").page_json(f"/ext/ocx?output={site['open']}")
    assert asked["lines"] == [] and asked["why"]  # no unit of it runs here
    assert "no open record" in served.web("admin").page_json("/ext/ocx?output=../../etc/passwd")["why"]
