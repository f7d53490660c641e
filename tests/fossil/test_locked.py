"""A write that meets another writer's lock (Fossil 2.21's 400 "database is
locked", nothing written) is sent again until the lock is gone."""
from __future__ import annotations

import threading

import pytest

from ocx.fossil import admin
from ocx.fossil.web import Page, locked

LOCKED_PAGE = b"<html><body>Database error: database is locked: {INSERT INTO rcvfrom ...}</body></html>"


def test_only_fossils_locked_page_is_sent_again():
    assert locked(Page(400, None, LOCKED_PAGE))
    assert not locked(Page(400, None, b"<html>Bad Request: no such form</html>"))
    assert not locked(Page(302, "/forumpost/abc", LOCKED_PAGE))


@pytest.mark.fossil
def test_posts_made_while_runs_set_their_users_up_all_land_once(served):
    """Other writers, as a node's runs are when they set their users up
    (`fossil user capabilities`), make Fossil refuse some posts as locked;
    each is sent again, and every post lands once."""
    session = served.web("alice")
    statuses: list[int] = []
    original = session.post

    def post(path, fields):
        page = original(path, fields)
        statuses.append(page.status)
        return page

    session.post = post
    stop = threading.Event()

    def other_writer():
        letters = ("i4", "i43")
        n = 0
        while not stop.is_set():
            admin.set_capabilities(served.path, "bob", letters[n % 2], home=served.home)
            n += 1

    writers = [threading.Thread(target=other_writer) for _ in range(3)]
    for writer in writers:
        writer.start()
    try:
        posted = [session.new_thread(f"under load {i}", f"post {i}") for i in range(30)]
    finally:
        stop.set()
        for writer in writers:
            writer.join()
        admin.set_capabilities(served.path, "bob", "i4", home=served.home)
    print(f"{statuses.count(400)} locked answers sent again, {len(posted)} posts")
    assert len(set(posted)) == 30
    with served.repository() as repository:
        for i, post_hash in enumerate(posted):
            found = repository.post(post_hash)
            assert found.sender.login == "alice" and found.body.strip() == f"post {i}"
