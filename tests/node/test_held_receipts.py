"""A pass holds the receipts from one whose forum post Fossil is still crosslinking (Repository.unsettled),
and is due again when that hold ends, rather than waiting for whatever event comes next: a post whose
crosslink never comes (its server killed mid-post) would otherwise hold every later receipt for good."""
from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import sqlite3

import pytest

from fossil.conftest import before_crosslink
from ocx.fossil.repository import SETTLE_SECONDS, Repository
from ocx.node.config import NodeConfig
from ocx.node_service.context import NodeContext
from ocx.node_service.intake import read_receipts
from ocx.node_service.pass_mark import read_mark
from ocx.node_service.tend import PassReport

pytestmark = pytest.mark.fossil


def one_pass(context: NodeContext) -> PassReport:
    report = PassReport()
    with Repository(context.config.repository) as repository:
        asyncio.run(read_receipts(context, None, repository, report))
    return report


def test_a_post_still_being_crosslinked_holds_the_pass_until_its_hold_ends(served, tmp_path):
    web = served.web("alice")
    held = web.new_thread("held", "a post whose crosslink never came")
    later = web.new_thread("later", "a post after it")
    copy = before_crosslink(served.path, held, tmp_path / "stranded.fossil")  # a crosslink that never came
    db = sqlite3.connect(copy)
    with Repository(copy) as repository:
        first, newest = repository.sender(held).rcvid, repository.max_rcvid()
        assert repository.sender(later).rcvid > first
    config = NodeConfig(name=f"held-{secrets.token_hex(4)}", repository=str(copy), url=served.base_url)
    context = NodeContext(config, "0" * 40)
    config.state_dir.mkdir(parents=True)
    try:
        (config.state_dir / "mark.json").write_text(json.dumps({"rcvid": first - 1, "retry": {}}))
        report = one_pass(context)
        assert read_mark(context)[0] == first - 1  # held: nothing after it was passed by
        assert report.retry_in is not None and SETTLE_SECONDS - 10 < report.retry_in <= SETTLE_SECONDS + 1
        with db:  # its hold over: received more than SETTLE_SECONDS ago
            db.execute("UPDATE rcvfrom SET mtime=mtime-? WHERE rcvid=?", ((SETTLE_SECONDS + 5) / 86400, first))
        report = one_pass(context)
        assert read_mark(context)[0] == newest and report.retry_in is None
    finally:
        db.close()
        shutil.rmtree(config.state_dir, ignore_errors=True)
