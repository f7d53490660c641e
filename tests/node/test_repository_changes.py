"""What wakes the node's service, which stays up (ocx/node_service/serve.py, D26), on a real
`fossil server`: the repository file's inotify fires for every request, reads included
(Fossil opens the file read-write), and only a request that wrote it asks for a pass."""
from __future__ import annotations

import os
import select
import shutil
import urllib.request

import pytest

from ocx.node_service.serve import RepositoryChanges

pytestmark = pytest.mark.fossil


def fired(changes: RepositoryChanges, seconds: float = 10.0) -> bool:
    """Whether the file's inotify reported anything within SECONDS (an event, not a timer: it
    comes within milliseconds of the request's end, and the bound only keeps a failure finite)."""
    ready, _, _ = select.select([changes.fd], [], [], seconds)
    return bool(ready)


def read(served) -> None:
    with urllib.request.urlopen(served.base_url + "/timeline", timeout=10) as page:
        assert page.status == 200


def test_a_read_fires_the_watch_and_asks_for_no_pass(served):
    read(served)  # a server's first request by a base URL writes it (config `baseurl:URL`): that is a write
    changes = RepositoryChanges(str(served.path))
    try:
        read(served)
        assert fired(changes)  # Fossil opened the file read-write, as D26 says
        assert not changes.written()
    finally:
        changes.close()


def test_a_post_asks_for_a_pass_and_then_nothing_more(served):
    changes = RepositoryChanges(str(served.path))
    try:
        changes.seen()
        served.web("alice").new_thread("changes", "a post is a write")
        assert fired(changes)
        assert changes.written()
        assert not changes.written()  # seen once: the same write asks for no second pass
    finally:
        changes.close()


def test_a_write_before_the_pass_began_is_the_pass_s_own(served):
    changes = RepositoryChanges(str(served.path))
    try:
        served.web("bob").new_thread("before", "written before the pass looked")
        changes.seen()  # a pass begins: it reads what was written
        assert not changes.written()
    finally:
        changes.close()


def test_a_replaced_repository_file_is_a_change_and_is_watched_from_then_on(served, tmp_path):
    copy = tmp_path / "copy.fossil"
    shutil.copyfile(served.path, copy)
    changes = RepositoryChanges(str(copy))
    try:
        restored = tmp_path / "restored.fossil"
        shutil.copyfile(served.path, restored)
        os.replace(restored, copy)  # a restore: a new file under the same name
        assert changes.written()
        with open(copy, "r+b") as again:  # the new file's own events now: opened for writing, nothing written
            again.read(100)
        assert fired(changes)
        assert not changes.written()
    finally:
        changes.close()
