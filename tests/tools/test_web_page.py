"""The web page (D30) as an ext program of a real `fossil server`: tool cards
for the viewer's capabilities, a POST runs the tool as the viewer (the
sender, D21), and a POST from elsewhere (its Referer) or without the form's
token (D43) changes nothing. Driven over HTTP with a logged-in session, and
in Debian's headless chromium. The console's sections are
test_console_page.py's; here, the tools on it."""
from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request

import pytest

from ocx.protocol import find_message, parse_message
from ocx.protocol.messages import Record

from .conftest import remove_state, serve_with_page


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    served, node = serve_with_page(tmp_path_factory.mktemp("web"), "web-test")
    served.clone("admin").write_wiki("sandbox/claude", '```json\n{"command": ["/bin/true"]}\n```\n')
    try:
        yield served
    finally:
        served.server.stop()
        remove_state(node)


def token_of(web) -> str:
    """The token the page's forms carry for this session (D43)."""
    found = re.search(r'name="token" value="([0-9a-f]{64})"', web.get("/ext/ocx").text)
    assert found, "the page's forms carry no token"
    return found.group(1)


def posted(web, fields: dict) -> str:
    return web.post("/ext/ocx", {**fields, "token": token_of(web)}).text


AN_HOUR = {"budget.wall": "1", "budget.wall~unit": "h"}  # the budget's structured fields (console/forms.py)


def test_cards_follow_the_viewers_capabilities(site):
    admin_page = site.web("admin").get("/ext/ocx").text
    assert all(f'id="tool-{name}"' in admin_page
               for name in ("create", "stop", "post", "audit", "push", "status", "release"))
    # the seven cards, the Nodes section's join form, and the Releases card's stage, accept and roll-back
    assert admin_page.count('<form method="POST"') == 11
    assert admin_page.count('name="form" value="join-token"') == 1
    carol = site.web("carol").get("/ext/ocx").text  # may post (moderated), not check in, not admin
    assert 'value="join-token"' not in carol and 'id="nodes"' not in carol  # an admin's alone
    assert 'id="releases-card"' in admin_page and 'id="releases"' not in carol  # so are releases (D46)
    forms = re.findall(r'name="tool" value="(\w+)"', carol)
    assert sorted(forms) == ["post", "push", "status"]
    # The others say whom they need instead of a form that would only be refused.
    refused = re.findall(r'id="tool-(\w+)"><h3>\w+ <span class="ocx-needs ocx-missing"[^>]*>([^<]+)</span>', carol)
    assert sorted(refused) == [("audit", "check in"), ("create", "admin or setup"), ("release", "admin or setup"),
                               ("stop", "admin or setup")]
    assert carol.count("You may not use it here") == 4


def test_the_page_is_drawn_in_the_repositorys_skin(site):
    page = site.web("admin").get("/ext/ocx").text
    # Fossil's own header and title around the cards (D30), not a bare document.
    assert re.search(r"<title>[^<]*OCX console\s*</title>", page), re.findall(r"<title>.*?</title>", page, re.S)
    assert 'href="/logout"' in page or "/logout" in page
    assert page.count("<html") == 1


def test_a_post_creates_a_record_as_the_viewer(site):
    web = site.web("admin")
    fields = {"tool": "create", "objective": "From the page.", **AN_HOUR, "dry_run": "false"}
    page = posted(web, fields)
    written = re.search(r"&quot;result&quot;: &quot;([0-9a-f]{40,64})&quot;", page)
    assert written, page[-2000:]
    hash_ = written.group(1)
    with site.repository() as repository:
        record = parse_message(find_message(repository.post(hash_).body))
        assert repository.sender(hash_).login == "admin"
    assert isinstance(record, Record) and record.objective == "From the page." and record.hears == ["admin"]


def test_a_post_from_elsewhere_is_refused(site):
    web = site.web("admin")
    before = site.sql("SELECT count(*) FROM blob")
    request_fields = urllib.parse.urlencode({"tool": "create", "objective": "x", "budget": '{"wall": "1h"}',
                                             "token": token_of(web)}).encode()
    request = urllib.request.Request(site.base_url + "/ext/ocx", data=request_fields,
                                     headers={"Referer": "http://elsewhere.example/", "Cookie": "; ".join(
                                         f"{c.name}={c.value}" for c in web._cookies)})
    with urllib.request.urlopen(request) as answer:
        text = answer.read().decode()
    assert "Referer, D30" in text and site.sql("SELECT count(*) FROM blob") == before


def test_a_dry_run_from_the_page_writes_nothing(site):
    before = site.sql("SELECT count(*) FROM blob")
    page = posted(site.web("admin"), {"tool": "create", "objective": "x", **AN_HOUR, "dry_run": "true"})
    assert "would_write" in page and "Dry run, nothing written" in page
    assert site.sql("SELECT count(*) FROM blob") == before


def test_in_chromium_a_person_logs_in_and_creates_a_record_from_the_page(site, tmp_path):
    from .chromium import Chromium, binary

    if binary() is None:
        pytest.skip("Debian's chromium is not installed (contrib/setup.sh --test installs it)")
    browser = Chromium(tmp_path / "profile")
    try:
        browser.goto(site.base_url + "/login")
        browser.submit(f"""document.querySelector('input[name=u]').value = 'admin';
            document.querySelector('input[name=p]').value = {site.passwords['admin']!r};
            document.querySelector('input[name=p]').form.submit();""")
        browser.goto(site.base_url + "/ext/ocx")
        assert browser.js("document.querySelectorAll('form[method=POST]').length") == 11  # join, releases
        browser.submit("""const form = document.querySelector('#tool-create form');
            form.querySelector('input[name=objective]').value = 'Made in chromium.';
            form.querySelector('input[name="budget.wall"]').value = '1';
            form.querySelector('select[name="budget.wall~unit"]').value = 'h';
            form.requestSubmit(form.querySelector('button[value=false]'));""")
        shown = browser.js("document.querySelector('#tool-create .ocx-answer').textContent")
        answer = __import__("json").loads(shown)
        assert answer["stopped"] is None, answer
        browser.goto(site.base_url + "/forumpost/" + answer["result"])
        assert "Made in chromium." in browser.js("document.body.innerText")
        browser.goto(site.base_url + "/ext/ocx")  # the Releases card's accept, a dry run: its answer in the tool's card
        browser.submit("""const form = document.querySelector('#releases-card form.ocx-release-accept');
            form.requestSubmit(form.querySelector('button[value=true]'));""")
        accepted = json.loads(browser.js("document.querySelector('#tool-release .ocx-answer').textContent"))
        assert accepted["dry_run"] and accepted["stopped"]["field"] == "action", accepted  # nothing staged here
        browser.goto(site.base_url + "/ext/ocx")  # the Nodes section: a join token, shown once (D36)
        browser.submit("""const form = document.querySelector('#nodes form');
            form.querySelector('input[name=name]').value = 'from-chromium';
            form.requestSubmit();""")
        token = browser.js("document.querySelector('#join-made pre').textContent")
    finally:
        browser.close()
    with site.repository() as repository:
        assert repository.sender(answer["result"]).login == "admin"  # D21: the viewer sent it
    from ocx.node.server_link import join

    assert join(site.base_url, token, "from-chromium", "ocx-node-from-chromium", None, [])  # its node user's password


def _page_answer(page: str) -> dict:
    shown = re.search(r'<pre class="ocx-answer">(.*?)</pre>', page, re.DOTALL)
    assert shown, page[-2000:]
    return __import__("json").loads(__import__("html").unescape(shown.group(1)))


def test_audit_from_the_page_tags_as_the_viewer_and_v2_reads_it(site):
    from ocx.reading.verdicts import verdicts

    checkin = site.commit("alice", "judged.txt", "judge me\n")
    answer = _page_answer(posted(site.web("bob"), {
        "tool": "audit", "checkin": checkin[:12], "verdict": "pass", "reason": "read every line",
        "against": "judged.txt", "dry_run": "false"}))
    assert answer["stopped"] is None, answer
    with site.repository() as repository:
        assert repository.sender(answer["result"]).login == "bob"  # D21: the viewer, by its session
        read = verdicts(repository, checkin)
    assert [(v.tag, v.sender, v.value, v.counts) for v in read] == [
        ("audited", "bob", "pass: read every line (against judged.txt)", True)]


def test_audit_from_the_page_refuses_the_viewers_own_checkin(site):
    checkin = site.commit("alice", "mine.txt", "my own\n")
    before = site.sql("SELECT count(*) FROM blob")
    answer = _page_answer(posted(site.web("alice"), {
        "tool": "audit", "checkin": checkin, "verdict": "pass", "reason": "fine", "against": "mine.txt",
        "dry_run": "false"}))
    assert answer["stopped"]["field"] == "checkin" and "D25" in answer["stopped"]["why"], answer
    assert site.sql("SELECT count(*) FROM blob") == before


def test_a_post_without_its_sessions_token_is_refused_whatever_its_referer(site):
    """D43: the Referer is this repository's own (WebSession sends it), yet a
    form without the token, with a made-up one, or with another login's
    token changes nothing; nor does a JSON call without one."""
    web = site.web("admin")
    before = site.sql("SELECT count(*) FROM blob")
    fields = {"tool": "create", "objective": "x", **AN_HOUR, "dry_run": "false"}
    for token in (None, "", "0" * 64, "é" * 64, token_of(site.web("bob"))):
        sent = fields if token is None else {**fields, "token": token}
        answer = _page_answer(web.post("/ext/ocx", sent).text)
        assert answer["stopped"]["field"] == "caller" and "D43" in answer["stopped"]["why"], answer
    called = web.page_json("/ext/ocx?json", {"tool": "create", "input": {"objective": "x", "budget": {"wall": "1h"}}})
    assert called["stopped"]["field"] == "caller" and "D43" in called["stopped"]["why"]
    assert site.sql("SELECT count(*) FROM blob") == before
    assert web.page_json("/ext/ocx?json")["token"] == token_of(web)  # the token the CLI fetches is the forms'


def test_in_chromium_a_page_a_run_checked_in_cannot_post_as_the_admin_viewing_it(site, tmp_path):
    """D43: any run user holds `i`, so it can check in an HTML page and a
    script, which Fossil serves raw from the page's own origin
    (/doc/BRANCH/PATH). Opened by an admin, its form posts to /ext/ocx with a
    Referer under the repository (D30 alone would take it) and without the
    token: the page writes nothing."""
    from .chromium import Chromium, binary

    if binary() is None:
        pytest.skip("Debian's chromium is not installed (contrib/setup.sh --test installs it)")
    form = ('<html><body><form id="f" method="POST" action="/ext/ocx">'
            '<input name="tool" value="create"><input name="objective" value="Sent by a page a run wrote.">'
            '<input name="budget" value=\'{"wall": "1h"}\'><input name="dry_run" value="false"></form>'
            '<script src="evil.js"></script></body></html>\n')
    site.commit("alice", "evil.js", "document.getElementById('f').submit();\n")
    site.commit("alice", "evil.html", form)
    before = site.sql("SELECT count(*) FROM blob")
    browser = Chromium(tmp_path / "profile")
    try:
        browser.goto(site.base_url + "/login")
        browser.submit(f"""document.querySelector('input[name=u]').value = 'admin';
            document.querySelector('input[name=p]').value = {site.passwords['admin']!r};
            document.querySelector('input[name=p]').form.submit();""")
        browser.goto(site.base_url + "/doc/trunk/evil.html")
        deadline = time.monotonic() + 30
        while not (browser.js("location.pathname") == "/ext/ocx" and browser.js("document.readyState") == "complete"
                   and browser.js("!!document.querySelector('#tool-create .ocx-answer')")):
            assert time.monotonic() < deadline, browser.js("location.href")
            time.sleep(0.2)
        shown = json.loads(browser.js("document.querySelector('#tool-create .ocx-answer').textContent"))
    finally:
        browser.close()
    assert shown["stopped"]["field"] == "caller" and "D43" in shown["stopped"]["why"], shown
    assert site.sql("SELECT count(*) FROM blob") == before  # nothing written as the admin


def test_the_releases_card_asks_through_the_release_tool_with_the_token_and_never_without(site):
    """D46: each of the Releases card's buttons is a POST of the release tool with the page's token (D43);
    one without it, or with another's, changes nothing; with it, a step that cannot move is refused naming
    the field, and a dry run writes nothing."""
    web = site.web("admin")
    page = web.get("/ext/ocx").text
    card = page[page.index('id="releases-card"'):]
    card = card[:card.index("</section>")]
    for step in ("stage", "accept", "rollback"):
        assert f'name="action" value="{step}"' in card
    assert card.count('name="token" value="' + token_of(web) + '"') == 3
    assert "current" in card and "previous" in card and "next" in card
    before = site.sql("SELECT count(*) FROM blob")
    for token in (None, "0" * 64, token_of(site.web("bob"))):
        fields = {"tool": "release", "action": "accept", "dry_run": "false"}
        answer = _page_answer(web.post("/ext/ocx", fields if token is None else {**fields, "token": token}).text)
        assert answer["stopped"]["field"] == "caller" and "D43" in answer["stopped"]["why"], answer
    answer = _page_answer(posted(web, {"tool": "release", "action": "accept", "dry_run": "false"}))
    assert answer["stopped"]["field"] == "action" and "nothing is staged" in answer["stopped"]["why"], answer
    answer = _page_answer(posted(web, {"tool": "release", "action": "show", "dry_run": "true"}))
    assert answer["stopped"] is None and answer["result"]["thread"] is None, answer
    assert site.sql("SELECT count(*) FROM blob") == before
