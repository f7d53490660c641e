"""The size cap on what run users send, at Fossil's level (node/service/oversized.py): a large
artifact is found by `blob.size` alone, and once shunned (admin.shun, as Fossil's /shun page
writes it) Fossil 2.21's server sends it to no pull or clone, which still finish and hold the rest."""
from __future__ import annotations

import hashlib

import pytest

from ocx.fossil import admin
from ocx.fossil.copies import lacking
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone

pytestmark = pytest.mark.fossil

ZEROS = 16 * 1024 * 1024


def test_a_shunned_artifact_reaches_no_pull_or_clone_and_they_finish(served, tmp_path):
    bob = served.clone("bob")  # made before: it pulls after the shun
    with served.repository() as repository:
        before = repository.max_rcvid()
    checkin = served.commit("alice", "zeros.bin", "\0" * ZEROS)
    blob = hashlib.sha3_256(b"\0" * ZEROS).hexdigest()
    with served.repository() as repository:
        upto = repository.max_rcvid()
        found = repository.larger_than(ZEROS - 1, before, upto)
        assert [(h, size, login) for h, size, login, _ in found] == [(blob, ZEROS, "alice")]
        assert repository.larger_than(ZEROS, before, upto) == []

    admin.shun(served.path, [blob], home=served.home)
    with served.repository() as repository:
        assert repository.shunned(blob) and repository.larger_than(ZEROS - 1, before, upto) == []
        assert blob not in repository.public_stored(before, upto) and checkin in repository.public_stored(before, upto)

    bob.pull()
    fresh = CallerClone.create(tmp_path / "fresh.fossil", served.base_url, "bob", served.passwords["bob"],
                               home=tmp_path / "home")
    for clone in (bob.path, fresh.path):
        with Repository(clone) as pulled:
            assert pulled.holding([checkin, blob]) == {checkin}  # the check-in, never the shunned file
        assert lacking(clone, served.path, before, upto) == 0  # so the runs' clone's mark moves on


def test_only_full_hashes_are_shunned(served):
    with pytest.raises(ValueError):
        admin.shun(served.path, ["abc'); DROP TABLE blob; --"], home=served.home)
