"""The web page on a real node (D30): a person logs in with Debian's
chromium on the host, creates a record from /ext/ocx, and sees the node's
response in the record's thread; audits a check-in from the page.

The node lives in the systemd container, set up by `ocx node init` (which
installs the page); chromium reaches its Fossil server through a port
Docker publishes on the host's 127.0.0.1 (web_node_inside.py forwards it
to the server inside). Who sent what is read from the repository (rcvfrom).
"""
from __future__ import annotations

import json
import time

import pytest

from .chromium import Chromium, binary

from .conftest import inside


@pytest.fixture(scope="module")
def container(node_in_container):
    return node_in_container


@pytest.fixture(scope="module")
def site(webnode):
    return webnode


@pytest.fixture
def browser(tmp_path):
    if binary() is None:
        pytest.skip("Debian's chromium is not installed (contrib/setup.sh --test installs it)")
    running = Chromium(tmp_path / "profile")
    try:
        yield running
    finally:
        running.close()


def log_in(browser: Chromium, url: str, login: str, password: str) -> None:
    browser.goto(url + "/login")
    browser.submit(f"""document.querySelector('input[name=u]').value = {login!r};
        document.querySelector('input[name=p]').value = {password!r};
        document.querySelector('input[name=p]').form.submit();""")


def test_a_person_creates_a_record_from_the_page_and_sees_the_response(container, site, browser):
    url = site["url"]
    log_in(browser, url, site["login"], site["password"])
    browser.goto(url + "/ext/ocx")
    assert site["login"] in browser.js("document.body.innerText")
    browser.submit("""const form = document.querySelector('#tool-create form');
        form.querySelector('input[name=runner]').value = 'testrun';
        form.querySelector('input[name=objective]').value = 'exit 0';
        form.querySelector('input[name="budget.wall"]').value = '2';
        form.querySelector('select[name="budget.wall~unit"]').value = 'm';
        form.requestSubmit(form.querySelector('button[value=false]'));""")
    answer = json.loads(browser.js("document.querySelector('#tool-create .ocx-answer').textContent"))
    assert answer["stopped"] is None, answer
    record = answer["result"]

    deadline = time.monotonic() + 120
    while not (seen := inside(container, "answers", record))["responses"]:
        assert time.monotonic() < deadline, f"no response to {record} in 120 s"
        time.sleep(1)
    assert seen == {"record_sender": site["login"], "responses": [["exited", site["node_user"]]]}

    browser.goto(f"{url}/forumpost/{record}")
    text = browser.js("document.body.innerText")
    assert f'"answers": "{record}"' in text and '"outcome": "exited"' in text, text[-3000:]


def test_a_person_audits_a_checkin_from_the_page(container, site, browser):
    url = site["url"]
    log_in(browser, url, site["login"], site["password"])
    browser.goto(url + "/ext/ocx")
    browser.submit(f"""const form = document.querySelector('#tool-audit form');
        form.querySelector('input[name=checkin]').value = {site["checkin"][:12]!r};
        form.querySelector('[name=verdict]').value = 'pass';
        form.querySelector('input[name=reason]').value = 'read every line';
        form.querySelector('input[name=against]').value = 'work.txt';
        form.requestSubmit(form.querySelector('button[value=false]'));""")
    answer = json.loads(browser.js("document.querySelector('#tool-audit .ocx-answer').textContent"))
    assert answer["stopped"] is None, answer
    # Sent by the person, in their session (D21, D30), named as the CLI's sync names it.
    assert inside(container, "tags", site["checkin"]) == {
        "tags": [["audited", "pass: read every line (against work.txt)", site["login"]]]}
