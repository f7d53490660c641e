"""Which OCX a node's units run (D46, D47; ocx/node/releases/serving.py and services.py): the
launcher runs the release `current` names by its own directory, else the installation's python;
a process knows its release from its prefix and names it in its runs' units; a node starting
after a kill mid-accept finds the root consistent and knows it must move; releases nothing names
are removed, the last three besides; no node is named for the releases' root."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocx.node.releases.links import MOVING, Releases
from ocx.node.releases.services import named_in, recover_at_start, remove_unnamed
from ocx.node.releases.serving import LAUNCHER, door_command, launcher_text, runs_python, serving_release

from .test_releases import Cut, stage

UNITS = Path(__file__).resolve().parents[2] / "units"
SHOW_EXECUTABLE = ["-c", "import sys; print(sys.executable)"]


def a_door(where: Path, name: str, says: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.py").write_text(f"import sys\nprint({says!r}, *sys.argv[1:])\n")


def launcher(tmp_path: Path, root: Path) -> Path:
    """The launcher for ROOT, this test's python as the installation's, its doors in tmp/package/page."""
    a_door(tmp_path / "package" / "page", "page_door", "installation's door")
    path = tmp_path / "ocx-python"
    path.write_text(launcher_text(sys.executable, str(tmp_path / "package"), str(root)))
    path.chmod(0o755)
    return path


def run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=60, cwd="/")


def accepted(root: Path, version: str) -> str:
    """A release staged and accepted as current."""
    releases = Releases(str(root))
    release = stage(root, version)
    releases.offer(release)
    releases.accept()
    return release


def test_with_no_release_current_the_launcher_runs_the_installations_python(tmp_path):
    root = tmp_path / "releases"
    root.mkdir()
    done = run(launcher(tmp_path, root), *SHOW_EXECUTABLE)
    assert done.returncode == 0 and done.stdout.strip() == sys.executable, done
    door = run(launcher(tmp_path, root), "--door", "page_door", "CONFIG", "SOCKET")
    assert door.stdout.strip() == "installation's door CONFIG SOCKET", door


def test_the_launcher_runs_currents_release_by_its_own_directory_never_through_the_link(tmp_path):
    root = tmp_path / "releases"
    first = accepted(root, "1")
    done = run(launcher(tmp_path, root), *SHOW_EXECUTABLE)
    assert done.returncode == 0 and done.stdout.strip() == str(root / first / "bin" / "python"), done
    second = accepted(root, "2")
    done = run(launcher(tmp_path, root), *SHOW_EXECUTABLE)
    assert done.stdout.strip() == str(root / second / "bin" / "python")  # an accept moves it, no file rewritten
    Releases(str(root)).rollback()
    assert run(launcher(tmp_path, root), *SHOW_EXECUTABLE).stdout.strip() == str(root / first / "bin" / "python")


def test_the_launcher_runs_the_door_of_currents_release(tmp_path):
    root = tmp_path / "releases"
    release = accepted(root, "1")
    a_door(root / release / "lib" / "python3.11" / "site-packages" / "ocx" / "page", "page_door", "release's door")
    door = run(launcher(tmp_path, root), "--door", "page_door", "CONFIG", "SOCKET")
    assert door.returncode == 0 and door.stdout.strip() == "release's door CONFIG SOCKET", door
    refused = run(launcher(tmp_path, root), "--door", "../../x", "CONFIG")
    assert refused.returncode == 2 and "not a door's name" in refused.stderr
    assert door_command("git_door") == f"{LAUNCHER} --door git_door"
    with pytest.raises(ValueError, match="door: "):
        door_command("../x")


@pytest.mark.parametrize("target", ["../../../usr", "nothing-0123", "0123456789abcdef-0123456789abcdef"])
def test_a_current_link_naming_no_runnable_release_runs_the_installation(tmp_path, target):
    root = tmp_path / "releases"
    root.mkdir()
    (root / "current").symlink_to(target)
    assert run(launcher(tmp_path, root), *SHOW_EXECUTABLE).stdout.strip() == sys.executable


def test_a_launcher_is_made_only_of_plain_absolute_paths():
    with pytest.raises(ValueError, match="python: "):
        launcher_text("/opt/x'; rm -rf /; '", "/opt/ocx")
    with pytest.raises(ValueError, match="python: "):
        launcher_text("python3", "/opt/ocx")


def test_a_process_names_its_own_releases_python_in_its_runs_and_the_installations_otherwise(tmp_path):
    root = tmp_path / "releases"
    release = accepted(root, "1")
    assert serving_release(str(root / "current"), str(root)) == str(root / release)  # resolved: never the link
    assert runs_python("/opt/ocx/venv/bin/python", str(root / "current"), str(root)) == \
        str(root / release / "bin" / "python")
    assert serving_release("/opt/ocx/venv", str(root)) is None
    assert runs_python("/opt/ocx/venv/bin/python", "/opt/ocx/venv", str(root)) == "/opt/ocx/venv/bin/python"
    assert serving_release(str(root / "staged" / release), str(root)) is None  # never a staged release


def test_every_unit_ocx_installs_runs_through_the_launcher():
    lines = [line for unit in UNITS.glob("*.service") for line in unit.read_text().splitlines()
             if line.startswith("Exec") and "python" in line]
    assert len(lines) >= 8
    assert all(f"{LAUNCHER} -I -m ocx." in line for line in lines), lines
    assert not [line for unit in UNITS.iterdir() for line in unit.read_text().splitlines()
                if "/opt/ocx/venv" in line and not line.startswith("#")]


def test_the_hook_and_the_ext_programs_run_through_the_launcher():
    from ocx.setup.git_door import git_door_program
    from ocx.setup.init import hook_command, web_page_program

    assert hook_command() == f"{LAUNCHER} -m ocx.cli.launch hook %R"
    assert web_page_program("/etc/ocx/n.json", "n").splitlines()[1].startswith(f"exec {LAUNCHER} --door page_door ")
    assert git_door_program("n").splitlines()[1].startswith(f"exec {LAUNCHER} --door git_door ")


def test_what_names_a_release_is_read_from_unit_command_words(tmp_path):
    root = tmp_path / "releases"
    a, b = "0123456789abcdef-0123456789abcdef", "fedcba9876543210-fedcba9876543210"
    words = [f"{root}/{a}/bin/python", "-I", "-m", "ocx.run_steps.stop_step", f"--x={root}/{b}/lib",
             f"{root}/current/bin/python", f"{root}/staged/{b}", f"{tmp_path}/other/{a}", f"{root}/{a}x"]
    assert named_in(words, str(root)) == {a, b}


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.from_regex(r"[0-9a-f]{16}-[0-9a-f]{16}", fullmatch=True), max_size=4),
       noise=st.lists(st.text(max_size=40), max_size=4))
def test_only_a_release_directly_under_the_root_is_named(ids, noise):
    root = "/var/lib/ocx/releases"
    words = [f"{root}/{release}/bin/python" for release in ids] + noise
    found = named_in(words, root)
    assert set(ids) <= found
    assert all(any(f"{root}/{release}" in word for word in words) for release in found)


def test_releases_nothing_names_are_removed_beyond_the_last_three_and_never_a_named_one(tmp_path):
    releases = Releases(str(tmp_path))
    made = []
    for version in "123456":
        made.append(stage(tmp_path, version))
        releases.offer(made[-1])
        releases.accept()
        os.utime(tmp_path / made[-1], (len(made), len(made)))
    # current 6, previous 5; a live run's unit names 1 (D47); 2, 3, 4: the last three others, kept
    assert remove_unnamed(releases, {made[0]}) == []
    os.utime(tmp_path / made[0], (0, 0))
    releases.offer(stage(tmp_path, "7"))
    releases.accept()
    assert remove_unnamed(releases, {made[0]}) == [made[1]]
    assert not (tmp_path / made[1]).exists() and (tmp_path / made[0]).is_dir()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".partial")]
    assert remove_unnamed(releases, set()) == [made[0]]


def cut_accept(root: Path, at: str) -> tuple[str, str]:
    """A release current, a second accepted and killed at step AT (links.py's cut)."""
    first = accepted(root, "1")
    second = stage(root, "2")
    Releases(str(root)).offer(second)

    def cut(step: str) -> None:
        if step == at:
            raise Cut(step)

    with pytest.raises(Cut):
        Releases(str(root), cut).accept()
    return first, second


@pytest.mark.parametrize("at", ["copied", "intent", "current", "previous"])
def test_a_node_starting_after_an_accept_was_killed_finds_the_root_consistent(tmp_path, at):
    root = tmp_path / "releases"
    first, second = cut_accept(root, at)
    moved_at = recover_at_start(str(root))
    links = Releases(str(root)).links()
    assert not (root / MOVING).exists() and not [p for p in os.listdir(root) if p.endswith((".partial", ".link"))]
    for name in ("current", "previous", "next"):
        assert not (root / name).is_symlink() or (root / name).resolve().is_dir()
    # completed when the intent's releases were whole, else undone; either way whole and current
    assert links in ({"current": second, "previous": first, "next": None},
                     {"current": first, "previous": None, "next": second})
    # when `current` last moved: services started before then restart onto it (restart_stale)
    assert moved_at == os.lstat(root / "current").st_mtime


def test_a_node_starting_while_a_command_holds_the_root_leaves_it_to_the_command(tmp_path):
    root = tmp_path / "releases"
    cut_accept(root, "intent")
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert recover_at_start(str(root)) is None
        assert (root / MOVING).exists()  # the command recovers it itself (staging.moving)
    finally:
        os.close(fd)
    assert recover_at_start(str(root)) is not None and not (root / MOVING).exists()


def test_no_root_or_no_runnable_current_moves_nothing(tmp_path):
    assert recover_at_start(str(tmp_path / "none")) is None
    root = tmp_path / "releases"
    root.mkdir()
    assert recover_at_start(str(root)) is None


def test_a_node_named_for_the_releases_root_is_refused_naming_the_field():
    from ocx.setup.elsewhere import ElsewhereOptions
    from ocx.setup.elsewhere import plan as plan_elsewhere
    from ocx.setup.init import InitError, InitOptions, plan

    with pytest.raises(InitError, match=r"^name: 'releases' is the releases' root \(/var/lib/ocx/releases\)"):
        plan(InitOptions(name="releases"))
    with pytest.raises(InitError, match=r"^name: 'releases'"):
        plan_elsewhere(ElsewhereOptions(name="releases", server="http://s:8080", admin_password=lambda: "x"))


def test_a_rerun_of_init_moves_an_earlier_hook_to_the_launcher_rather_than_adding_one(tmp_path):
    import json

    from ocx.fossil.admin import new_repository
    from ocx.fossil.program import run_fossil
    from ocx.fossil.repository import Repository
    from ocx.node.config import NodeConfig
    from ocx.setup.init import InitReport, _hook, hook_command

    home, repository = tmp_path / "home", tmp_path / "r.fossil"
    home.mkdir()
    new_repository(repository, "admin", home=home)
    run_fossil(["hook", "add", "--command", "echo other", "--type", "after-receive", "--sequence", "2",
                "-R", str(repository)], home=home)
    run_fossil(["hook", "add", "--command", "/opt/ocx/venv/bin/python -m ocx.cli.launch hook %R", "--type",
                "after-receive", "--sequence", "1", "-R", str(repository)], home=home)
    config = NodeConfig(name="n", repository=str(repository), url="http://127.0.0.1:1")
    for _ in range(2):
        report = InitReport(config)
        _hook(config, home, report)
    with Repository(str(repository)) as opened:
        hooks = json.loads(opened.config("hooks"))
    assert [h["cmd"] for h in hooks] == ["echo other", hook_command()]
    assert not report.changed  # the second run found it
