"""The console (docs/console.md) on a real node, looked at in Debian's chromium on
this host: each person's own "Needs you", a running session's bars and
output moving between two looks without a reload, a stopped run moving to
Done with its outcome, a verdict a run recorded in a branch's queue, every
tool's form keeping its values after a refused POST, and a POST from a page
a run's user checked in refused (D43).

The node is web_node_inside.py's (`ocx node init` in the systemd
container); console_inside.py posts records and check-ins there as
people do, through Fossil's web forms and by sync. With
OCX_CONSOLE_SCREENSHOTS=DIR the last test leaves each section's picture,
1280 and 400 px wide, in DIR (docs/console.md's).
"""
from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path

import pytest

from tests.node_system.harness import wait_for

from .chromium import Chromium, binary
from .conftest import inside
from .test_web_on_node import log_in

TICKING = {"runner": "ticker", "budget": {"wall": "20m", "cpu": 900, "memory": "256M", "processes": 32}}


def console(container, *args: str) -> dict:
    done = container.exec(["/opt/ocx/venv/bin/python", "-m", "tests.tools.console_inside", *args], workdir="/src",
                          env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stage(node_in_container, webnode) -> dict:
    prepared = console(node_in_container, "prepare")
    admin = node_in_container.exec(["cat", f"/etc/ocx/{webnode['name']}.admin-password"]).output.strip()
    return {**webnode, **prepared, "admin": admin, "container": node_in_container}


@pytest.fixture
def open_browser(tmp_path):
    if binary() is None:
        pytest.skip("Debian's chromium is not installed (contrib/setup.sh --test installs it)")
    opened = []

    def as_person(login: str, password: str, url: str, width: int = 1280) -> Chromium:
        browser = Chromium(tmp_path / f"profile-{login}-{len(opened)}")
        opened.append(browser)
        browser.width(width)
        log_in(browser, url, login, password)
        browser.goto(url + "/ext/ocx")
        return browser

    yield as_person
    for browser in opened:
        browser.close()


def record(stage: dict, login: str, fields: dict, title: str = "OCX record") -> str:
    password = stage["admin"] if login == "admin" else stage["password"]
    return console(stage["container"], "record", login, password, json.dumps(fields), title)["record"]


def text_of(browser: Chromium, selector: str) -> str:
    return browser.js(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''")


def until(check, what: str, timeout: float = 120.0, every: float = 0.5):
    return wait_for(check, timeout, every, what)


def test_an_admin_and_a_second_person_each_see_their_own_needs_you(stage, open_browser):
    container, pat = stage["container"], stage["login"]
    refused = record(stage, "admin", {"runner": "nosuchrunner", "objective": "ADMIN-REFUSED run"})
    overrun = record(stage, pat, {**TICKING, "objective": "PAT-OVERRUN run", "budget": {"wall": "3s"}})
    watching = record(stage, pat, {**TICKING, "objective": "PAT-WATCHES run", "checkins": ["console-watched"]})
    assert console(container, "response", refused)["outcome"] == "refused"
    assert console(container, "response", overrun)["outcome"] == "budget"
    console(container, "reply", "admin", stage["admin"], watching, "QUESTION-FOR-PAT: which file first?")
    checkin = console(container, "commit", "admin", stage["admin"], "console-watched", "w.txt", "watched\n")["checkin"]

    admins = open_browser("admin", stage["admin"], stage["url"])
    mine = text_of(admins, "#needs-you")
    assert "ADMIN-REFUSED" in mine and "refused" in mine, mine
    assert not any(other in mine for other in ("PAT-OVERRUN", "QUESTION-FOR-PAT", checkin[:12])), mine

    pats = open_browser(pat, stage["password"], stage["url"])
    theirs = text_of(pats, "#needs-you")
    assert "PAT-OVERRUN" in theirs and "budget" in theirs and "QUESTION-FOR-PAT" in theirs, theirs
    assert checkin[:12] in theirs and "no verdict" in theirs, theirs
    assert "ADMIN-REFUSED" not in theirs, theirs
    # Seen: a reply to the answer is what the page remembers it by (it keeps nothing of its own).
    answer = pats.js("[...document.querySelectorAll('#needs-you a.ocx-act')].find(a => a.href.includes('/forumpost/'))"
                     ".href.split('/forumpost/')[1]")
    console(container, "reply", pat, stage["password"], answer, "Seen, thanks.")
    pats.goto(stage["url"] + "/ext/ocx")
    assert "PAT-OVERRUN" not in text_of(pats, "#needs-you")
    console(container, "stop", watching)


def test_a_running_sessions_bars_and_output_move_between_two_looks(stage, open_browser):
    ticking = record(stage, stage["login"], {**TICKING, "objective": "TICKING run"})
    console(stage["container"], "wait_active", ticking)
    browser = open_browser("admin", stage["admin"], stage["url"])
    run = f'#in-work article[data-record="{ticking}"]'

    def look() -> dict | None:
        seen = browser.js(f"""(() => {{ const run = document.querySelector('{run}'); if (!run) return null;
            return {{bars: [...run.querySelectorAll('.ocx-bar-figure')].map(e => e.textContent),
                     fills: [...run.querySelectorAll('.ocx-fill')].map(e => e.style.width),
                     output: (run.querySelector('pre.ocx-tail') || {{}}).textContent || ''}}; }})()""")
        return seen if seen and "tick" in seen["output"] and len(seen["bars"]) == 4 else None

    browser.js("window.ocxFirstLook = true")  # gone if the page were loaded again
    browser.js(f"document.querySelector('{run} details.ocx-output').open = true")  # shown to an admin on a click
    first = until(look, "bars and output of the running session")
    second = until(lambda: (now := look()) and now["bars"][0] != first["bars"][0] and now["output"] != first["output"]
                   and now, "its bars and output moving")
    assert browser.js("window.ocxFirstLook === true")  # the page's script moved them, no reload
    assert second["bars"][1] != first["bars"][1] or second["fills"][1] != first["fills"][1]  # its CPU
    assert first["bars"][0].endswith("of 20 min") and "of 256 MiB" in first["bars"][2]
    assert all(width.endswith("%") for width in second["fills"])
    console(stage["container"], "stop", ticking)


def test_a_stopped_run_moves_to_done_with_its_outcome(stage, open_browser):
    stopping = record(stage, stage["login"], {**TICKING, "objective": "STOP-ME run"})
    console(stage["container"], "wait_active", stopping)
    browser = open_browser("admin", stage["admin"], stage["url"])
    assert "STOP-ME" in text_of(browser, "#in-work")
    browser.submit(f"""const form = document.querySelector('#tool-stop form');
        form.querySelector('[name=record]').value = {stopping[:16]!r};
        form.requestSubmit(form.querySelector('button[value=false]'));""")
    assert "Done: wrote" in text_of(browser, "#tool-stop"), text_of(browser, "#tool-stop")

    def moved() -> bool:
        browser.goto(stage["url"] + "/ext/ocx")
        return "STOP-ME" in text_of(browser, "#done") and "STOP-ME" not in text_of(browser, "#in-work")

    until(moved, "the stopped run in Done", every=2)
    row = browser.js("""[...document.querySelectorAll('#done tr')].find(r => r.innerText.includes('STOP-ME'))
        .querySelector('.ocx-word').className""")
    assert "ocx-calm" in row and "stopped" in text_of(browser, "#done")


def test_a_branchs_queue_shows_the_verdict_a_run_recorded(stage, open_browser):
    container = stage["container"]
    before = console(container, "commit", stage["login"], stage["password"], "console-ci", "a.txt", "before\n")["checkin"]
    ci = record(stage, "admin", {"runner": "command", "command": ["python3", "-c", "print('looked at it')"],
                                 "checkins": ["console-ci"], "hears": [], "objective": "CI of console-ci"})
    judged = console(container, "commit", stage["login"], stage["password"], "console-ci", "a.txt", "after\n")["checkin"]
    until(lambda: inside(container, "tags", judged)["tags"], "the run's ci verdict", timeout=180, every=2)
    browser = open_browser("admin", stage["admin"], stage["url"])
    browser.goto(stage["url"] + "/ext/ocx?branch=console-ci")
    marks = browser.js(f"""[...document.querySelectorAll('#queue li.ocx-checkin')].map(li => [
        li.querySelector('code').textContent, [...li.querySelectorAll('.ocx-verdict')].map(v => [v.className, v.title])])""")
    shown = dict((short, verdicts) for short, verdicts in marks)
    (kind, title), = shown[judged[:12]]
    assert "ocx-pass" in kind and f"ci by {stage['node_user']}" in title and "looked at it" in title and ci in title
    assert "ocx-none" in shown[before[:12]][0][0]  # given to no run: no verdict
    console(container, "stop", ci)


FILLED = {
    "create": {"runner": "nosuchrunner", "objective": "KEEP <b>me</b>", "checkins": "one\ntwo", "budget.wall": "7",
               "budget.wall~unit": "h", "budget.memory": "300", "budget.memory~unit": "M", "budget.processes": "9",
               "sandbox.network": "false", "sandbox.read_only": "/usr/share", "restrict.no_password": "true",
               "restrict.branch": "kept-branch", "hears": "admin"},
    "stop": {"record": "0123456789abcdef", "lost": "true"},
    "post": {"to": "0123456789abcdef", "text": "Kept\ntext"},
    "audit": {"checkin": "0123456789abcdef", "verdict": "fail", "reason": "kept reason", "against": "README.md",
              "tag": "ci"},
    "push": {},
    "status": {},
}


def test_each_tools_form_keeps_its_values_after_a_refused_post(stage, open_browser):
    browser = open_browser("admin", stage["admin"], stage["url"])
    for tool, values in FILLED.items():
        browser.submit(f"""const form = document.querySelector('#tool-{tool} form');
            for (const [name, value] of Object.entries({json.dumps(values)})) form.elements[name].value = value;
            form.requestSubmit(form.querySelector('button[value=false]'));""")
        card = text_of(browser, f"#tool-{tool}")
        kept = browser.js(f"""(() => {{ const form = document.querySelector('#tool-{tool} form');
            return Object.fromEntries(Object.keys({json.dumps(values)}).map(n => [n, form.elements[n].value])); }})()""")
        assert kept == values, (tool, kept)
        answer = json.loads(browser.js(f"document.querySelector('#tool-{tool} pre.ocx-answer').textContent"))
        assert answer["tool"] == tool and (answer["stopped"] is None) == (tool == "status"), answer
        if tool == "status":
            assert "Done." in card and answer["result"]["login"] == "admin"
        else:
            assert f"Stopped at {answer['stopped']['field']}" in card, (tool, card)


def test_a_post_from_a_page_a_runs_user_checked_in_is_refused(stage, open_browser):
    """D43: `evil` holds i, as every run user does; its page is served raw from
    the page's own origin and posts to /ext/ocx with the viewer's cookie."""
    container = stage["container"]
    form = ('<html><body><form id="f" method="POST" action="/ext/ocx"><input name="tool" value="create">'
            '<input name="objective" value="Sent by a page a run wrote."><input name="budget.wall" value="1">'
            '<input name="budget.wall~unit" value="h"><input name="dry_run" value="false"></form>'
            '<script src="evil.js"></script></body></html>\n')
    console(container, "commit", "evil", stage["evil"], "trunk", "evil.js", "document.getElementById('f').submit();\n")
    console(container, "commit", "evil", stage["evil"], "trunk", "evil.html", form)
    count = "SELECT count(*) FROM blob"
    before = inside(container, "sql", count)["rows"]
    browser = open_browser("admin", stage["admin"], stage["url"])
    browser.goto(stage["url"] + "/doc/trunk/evil.html")
    until(lambda: browser.js("location.pathname") == "/ext/ocx" and browser.js("document.readyState") == "complete"
          and browser.js("!!document.querySelector('#tool-create pre.ocx-answer')"), "the page's answer", timeout=30)
    shown = json.loads(browser.js("document.querySelector('#tool-create pre.ocx-answer').textContent"))
    assert shown["stopped"]["field"] == "caller" and "D43" in shown["stopped"]["why"], shown
    assert inside(container, "sql", count)["rows"] == before


SECTIONS = ("#needs-you", "#in-work", "#done", "#queue", "#tools")


def test_every_section_fits_1280_and_400_px_wide(stage, open_browser, tmp_path):
    """Pictures of each section (docs/console.md's with OCX_CONSOLE_SCREENSHOTS),
    of a node at work: a session hearing a person who asked it something, a CI
    record running one check-in while the next waits its turn. None is wider
    than the window; the runs' bars are drawn."""
    container, pat, password = stage["container"], stage["login"], stage["password"]
    docs = record(stage, "admin", {**TICKING, "objective": "Keep docs/ in step with each check-in on console-shots; "
                                   "a check-in passes when every command it changes is documented.",
                                   "checkins": ["console-shots"], "hears": ["admin", pat]})
    ci = record(stage, "admin", {"runner": "command", "checkins": ["console-shots"], "hears": [],
                                 "command": ["python3", "-c", "import time; time.sleep(120); print('12 tests passed')"],
                                 "objective": "CI: the tests pass on each check-in of console-shots",
                                 "budget": {"wall": "10m", "memory": "512M", "processes": 64}})
    console(container, "wait_active", docs)
    console(container, "reply", pat, password, docs, "Could you also look at docs/guide-people.md?")
    for text in ("first\n", "second\n"):
        console(container, "commit", pat, password, "console-shots", "docs.txt", text)
    record(stage, "admin", {"runner": "nosuchrunner", "objective": "Review the parser rewrite"})
    out = Path(os.environ.get("OCX_CONSOLE_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    for width in (1280, 400):
        browser = open_browser("admin", stage["admin"], stage["url"], width)
        browser.goto(stage["url"] + "/ext/ocx?branch=console-ci")
        until(lambda: browser.goto(stage["url"] + "/ext/ocx?branch=console-ci") or (
            "1 check-in waiting" in text_of(browser, f'article[data-record="{ci}"]')
            and browser.js(f"document.querySelectorAll('article[data-record=\"{ci}\"] .ocx-bar').length") == 4),
            "the CI record running one check-in", timeout=300, every=3)
        until(lambda: "tick" in text_of(browser, f'article[data-record="{docs}"] pre.ocx-tail'), "the output shown",
              timeout=60)
        assert browser.js("document.documentElement.scrollWidth") <= width + 1
        for section in SECTIONS:
            assert browser.js(f"document.querySelector('{section}').scrollWidth") <= width
            shot = out / f"{section[1:]}-{width}.png"
            drawn = browser.screenshot(shot, section)
            assert shot.stat().st_size > 2000 and drawn[0] <= width + 16
    for done in (docs, ci):
        console(container, "stop", done)


def test_the_page_is_its_services_and_answers_with_the_service_stopped(stage, open_browser):
    """D30: the door Fossil runs hands each look to ocx-page@NAME (its
    status counts it); with the service and its socket stopped, the door runs
    the page itself and the console is the same."""
    container, name = stage["container"], stage["name"]
    units = (f"ocx-page@{name}.socket", f"ocx-page@{name}.service")

    def answered() -> int:
        status = container.exec(["systemctl", "show", units[1], "-p", "StatusText", "--value"]).output
        found = re.match(r"answered (\d+) requests", status.strip())
        return int(found.group(1)) if found else -1

    before = answered()
    assert before >= 0, "the page service is not running"
    browser = open_browser("admin", stage["admin"], stage["url"])
    drawn = "!!document.querySelector('#tool-create form') && !!document.querySelector('#queue select')"
    assert f"node {name}" in text_of(browser, "#in-work") and browser.js(drawn)
    until(lambda: answered() > before, "the page service counting the look")
    assert container.exec(["systemctl", "stop", *units]).exit_code == 0
    try:
        assert container.exec(["test", "-e", f"/run/ocx/{name}/page.sock"]).exit_code != 0
        browser.goto(stage["url"] + "/ext/ocx")
        assert f"node {name}" in text_of(browser, "#in-work") and browser.js(drawn)
        with urllib.request.urlopen(stage["url"] + "/ext/ocx?json", timeout=60) as answer:
            assert json.loads(answer.read())["login"] == "nobody"
        state = container.exec(["systemctl", "is-active", units[1]]).output.strip()
        assert state == "inactive", state
    finally:
        container.exec(["systemctl", "start", *units])
