"""Staging's root side without systemd (ocx/node/releases/staging.py, D45, D48): the build unit's
description, where the wheels come from, the dry run, and what a build leaves read as hostile.
The build itself runs in the systemd container (tests/node_system/test_releases_stage.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ocx.node.releases.links import ReleaseError, Releases
from ocx.node.releases.staging import BUILD_USER, INPUTS, Plan, Source, _read_note, build_unit, moving, stage, sweep
from ocx.systemd.units import properties

CHECKIN = "c" * 64


def test_the_build_unit_is_the_build_users_with_no_network_a_budget_and_only_staged_writable() -> None:
    service = build_unit("/var/lib/ocx/releases", "/var/lib/ocx/releases/.input-x", CHECKIN, "0" * 16,
                         hidden=["/etc/ocx", "/var/lib/ocx/demo", "/var/lib/ocx/releases-not"])
    props = {name: value for name, _, value in properties(service)}
    assert props["User"] == BUILD_USER and props["Group"] == BUILD_USER and "DynamicUser" not in props
    assert props["PrivateNetwork"] is True and props["RestrictAddressFamilies"] == [True, ["AF_UNIX"]]
    assert props["ProtectSystem"] == "strict" and props["ProtectHome"] == "yes" and props["PrivateTmp"] is True
    assert props["ReadWritePaths"] == ["/var/lib/ocx/releases/staged"]
    assert props["InaccessiblePaths"] == ["-/etc/ocx", "-/var/lib/ocx/demo", "-/var/lib/ocx/releases-not"]
    assert props["MemoryMax"] > 0 and props["TasksMax"] > 0 and props["RuntimeMaxUSec"] > 0
    assert props["CPUQuotaPerSecUSec"] > 0 and props["CapabilityBoundingSet"] == 0 and props["NoNewPrivileges"]
    assert service.argv[1:4] == ["-I", "-m", "ocx.release_build.build"]  # root's own code, isolated (D41)


@pytest.mark.parametrize("holder", ["/var/lib/ocx", "/var/lib/ocx/releases", "/var/lib/ocx/releases/", "/"])
def test_a_nodes_path_holding_the_releases_root_refuses_the_build(holder: str) -> None:
    """A node named `releases` (its state is the releases' root) or a repository adopted in /var/lib/ocx:
    hiding it would hide staged/, not hiding it would show the node's own to the build (D16, D48)."""
    with pytest.raises(ReleaseError, match="hidden: .* holds the releases' root"):
        build_unit("/var/lib/ocx/releases", "/x", CHECKIN, "0" * 16, hidden=["/etc/ocx", holder])


def fill(inputs: str) -> None:
    os.mkdir(os.path.join(inputs, "wheel"))


def test_with_no_current_release_a_wheelhouse_must_be_named(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="wheelhouse: there is no current release"):
        stage(Releases(str(tmp_path)), Source(CHECKIN, fill), 0, 0, dry_run=True)


def test_the_dry_run_says_what_it_would_build_and_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "releases"
    plan = stage(Releases(str(root)), Source(CHECKIN, fill, str(tmp_path)), 0, 0, dry_run=True)
    assert isinstance(plan, Plan) and plan.wheels == str(tmp_path) and plan.checkin == CHECKIN
    assert plan.build_unit.name.startswith("ocx-release-build-") and not root.exists()


def test_a_note_the_build_left_is_read_bounded_and_never_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("root's")
    (tmp_path / "t.done").symlink_to(tmp_path / "secret")
    (tmp_path / "t.failed").write_text("x" * 10_000)
    assert _read_note(str(tmp_path), "t.done") is None
    assert _read_note(str(tmp_path), "t.failed") == "x" * 4096
    assert _read_note(str(tmp_path), "absent") is None


def test_moving_holds_the_root_and_removes_what_a_killed_stage_left(tmp_path: Path) -> None:
    left = tmp_path / f"{INPUTS}0123456789abcdef"
    (left / "wheels").mkdir(parents=True)
    with moving(str(tmp_path)) as releases:
        assert releases.root == str(tmp_path) and not left.exists()
        assert all(value is None for value in releases.links().values())


def staged_release(root: Path, checkin: str) -> str:
    from ocx.node.releases.links import release_id
    from ocx.node.releases.tree import tree_digest

    work = root / "staged" / f"build-{checkin[:4]}"
    (work / "lib").mkdir(parents=True)
    (work / "lib" / "version.txt").write_text(checkin)
    digest = tree_digest(str(work))
    release = release_id(checkin, digest)
    work.rename(root / "staged" / release)
    (root / "staged" / f"{release}.json").write_text(json.dumps({"checkin": checkin, "digest": digest,
                                                                  "smoke": {"version": "passed"}}))
    return release


def test_a_sweep_keeps_next_and_the_accepted_records_and_removes_what_killed_stages_left(tmp_path: Path) -> None:
    releases = Releases(str(tmp_path))
    accepted = staged_release(tmp_path, "a" * 64)
    releases.offer(accepted)
    releases.accept()
    offered = staged_release(tmp_path, "b" * 64)
    releases.offer(offered)
    never = staged_release(tmp_path, "c" * 64)  # built, then its stage was killed before the offer
    staged = tmp_path / "staged"
    (staged / "build-0123456789abcdef" / "lib").mkdir(parents=True)
    (staged / "0123456789abcdef.done").write_text(never)
    outside = tmp_path / "outside"
    (outside / "kept").mkdir(parents=True)
    (staged / "link").symlink_to(outside)
    sweep(releases)
    assert sorted(os.listdir(staged)) == sorted([f"{accepted}.json", offered, f"{offered}.json"])
    assert (outside / "kept").is_dir()  # a link is removed, never followed
    assert releases.links() == {"current": accepted, "previous": None, "next": offered}
