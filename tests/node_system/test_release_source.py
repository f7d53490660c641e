"""A release staged from the repository of OCX's source the node's configuration names (D45), with the real
command line as root on a real node: `ocx release source` writes the choice beside the configuration; a
check-in that passed its CI is gated in the named repository and its tree built there by the build unit; a
check-in the named repository does not hold, and a file that is not a Fossil repository, refused, named."""
from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .battery import FLIT_TREE, Committer, passed_checkin
from .harness import ocx
from .test_releases_stage import fresh_root, release, shown

pytestmark = pytest.mark.systemd


def test_a_checkin_is_staged_from_the_release_source_the_node_names(node):
    root = fresh_root()
    checkin, _ = passed_checkin(node, f"release-{secrets.token_hex(2)}", FLIT_TREE)
    # The source: root's own copy of the served repository (a copy keeps who sent each tag; a clone would
    # name itself their sender, D29), in a directory only root may change. What is committed after is not in it.
    directory = Path(f"/var/lib/ocx-source-test-{secrets.token_hex(3)}")
    directory.mkdir(mode=0o755)
    source = directory / "ocx-source.fossil"
    served = sqlite3.connect(f"file:{node.config.repository}?mode=ro", uri=True)
    copy = sqlite3.connect(source)
    served.backup(copy)
    copy.close()
    served.close()
    os.chmod(source, 0o644)
    later = Committer(node, f"later-{secrets.token_hex(2)}").commit({"later.txt": "not in the source\n"})
    try:
        said = ocx("release", "source", str(source), "--node", node.name).stdout
        assert str(source) in said and f"/etc/ocx/{node.name}.release-source" in said, said
        assert str(source) in ocx("release", "source", "--node", node.name).stdout
        refused = release("stage", "--checkin", later[:12], "--node", node.name, "--wheelhouse", WHEELHOUSE_INSIDE,
                          root=root, check=False)
        assert refused.returncode == 1, refused
        assert f"checkin: {later[:12]} is not a check-in of release_source {source}" in refused.stderr, refused
        assert not os.path.exists(f"{root}/staged")  # refused before anything was built
        # The check-in the source holds passes the gate there, and its tree, written from the source, is built
        # by the build unit (which finds no wheel for its backend: the build ran, quickly, and stages nothing).
        built = release("stage", "--checkin", checkin[:12], "--node", node.name, "--wheelhouse", WHEELHOUSE_INSIDE,
                        root=root, check=False)
        assert built.returncode == 1, built
        assert "build: dependency: flit_core>=3.9 is in no wheel given" in built.stderr, built.stderr
        assert shown(root)["next"] is None
        (directory / "text.fossil").write_text("not a repository\n")
        bad = ocx("release", "source", str(directory / "text.fossil"), "--node", node.name, check=False)
        assert bad.returncode == 1 and "release_source: " in bad.stderr and "not a Fossil repository" in bad.stderr
        assert str(source) in ocx("release", "source", "--node", node.name).stdout  # the choice is unchanged
    finally:
        ocx("release", "source", "--served", "--node", node.name)
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    assert not os.path.exists(f"/etc/ocx/{node.name}.release-source")
