"""Staging a release on a node (D45, D48) and moving its links from the command line (D46), with
the real build unit: a wheel of the working tree staged offline as the build user, smoked and
accepted; a build that reaches for the network or outside staged/ fails and stages nothing; a
check-in without a passing ci verdict, or whose build needs a wheel nobody gave, refused, named;
a release changed after staging not what accept makes current."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.container.systemd_container import WHEELHOUSE_INSIDE

from .battery import FLIT_TREE, Committer, ocx_tree, passed_checkin
from .harness import PYTHON, ocx, systemctl, wait_for
from .release_wheels import make_wheel, working_tree_wheel

pytestmark = pytest.mark.systemd

SRC = Path("/src")
BUILD_SECONDS = 900  # a whole virtual environment built on a busy 2-core machine


def fresh_root() -> str:
    """A releases' root of the test's own, beside the node's (the build's PrivateTmp hides /tmp)."""
    return f"/var/lib/ocx-releases-test-{secrets.token_hex(3)}"


def release(*args: str, root: str, check: bool = True) -> subprocess.CompletedProcess:
    return ocx("release", *args, "--root", root, check=check, timeout=BUILD_SECONDS)


def shown(root: str) -> dict:
    return json.loads(release("show", "--json", root=root).stdout)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    if not Path(WHEELHOUSE_INSIDE).is_dir():
        pytest.fail(f"no wheelhouse at {WHEELHOUSE_INSIDE}: tests/container/build-image.sh makes it on the host")
    directory = tmp_path_factory.mktemp("wheels")
    working_tree_wheel(SRC, directory)
    return directory


@pytest.fixture(scope="module")
def first(wheels, node) -> tuple[str, str]:
    """The first release staged, with a node configured on the host (the smoke reads its configuration)."""
    root = fresh_root()
    done = release("stage", "--wheel", str(next(wheels.glob("ocx-*.whl"))), "--wheelhouse", WHEELHOUSE_INSIDE,
                   root=root)
    return root, done.stdout.strip().splitlines()[-1].removeprefix("next: ")


def test_a_wheel_of_the_working_tree_is_staged_as_next_once_its_smoke_passed(first, node):
    root, staged = first
    links = shown(root)
    assert links["current"] is None and links["next"]["release"] == staged
    smoke = links["next"]["smoke"]
    assert smoke["version"].startswith("passed: ocx 0.1.0 (protocol v1"), smoke  # its own `ocx version`
    # and it reads the node's live configuration (a copy, no secret) as the node would
    read = smoke["configuration"]
    assert read.startswith("passed: read the configuration of ") and node.name in read, read
    # built by the build user, not root, and only there (D48)
    build = pwd.getpwnam("ocx-build").pw_uid
    assert os.stat(f"{root}/staged/{staged}").st_uid == build
    assert os.stat(f"{root}/staged/{staged}/lib").st_uid == build
    assert sorted(os.listdir(root)) == [".lock", "next", "preview", "staged"]  # preview: root's copy of next
    assert sorted(os.listdir(f"{root}/staged")) == [staged, f"{staged}.json"]


def test_accept_makes_roots_own_copy_current_and_it_runs(first):
    root, staged = first
    said = release("accept", "--dry-run", root=root).stdout
    assert f"would take root's copy made at stage (preview/{staged})" in said and shown(root)["current"] is None
    release("accept", root=root)
    links = shown(root)
    assert links["current"]["release"] == staged and links["next"] is None and links["previous"] is None
    assert os.readlink(f"{root}/current") == staged
    assert all(os.lstat(os.path.join(path, name)).st_uid == 0
               for path, dirs, files in os.walk(f"{root}/{staged}") for name in dirs + files)
    done = subprocess.run([f"{root}/current/bin/python", "-I", "-B", "-m", "ocx.cli.launch", "version"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0 and done.stdout.startswith("ocx 0.1.0"), done
    assert f"{root}/current" in done.stdout or f"{root}/{staged}" in done.stdout, done.stdout  # its own, not staged/


def stage_from_current(root: str) -> str:
    """Staged again with no wheelhouse named: the build takes the current release's own wheels (D45)."""
    done = release("stage", "--wheel", str(next(Path(f"{root}/current/wheels").glob("ocx-*.whl"))), root=root)
    return done.stdout.strip().splitlines()[-1].removeprefix("next: ")


def test_a_roll_back_makes_previous_current_again(first):
    root, accepted = first
    if shown(root)["current"] is None:
        release("accept", root=root)
    refused = release("rollback", root=root, check=False)
    assert refused.returncode == 1 and "previous: there is no release to roll back to" in refused.stderr, refused
    second = stage_from_current(root)
    release("accept", root=root)
    assert (shown(root)["current"]["release"], shown(root)["previous"]["release"]) == (second, accepted)
    said = release("rollback", "--dry-run", root=root).stdout
    assert f"would make {accepted} current and {second} previous" in said
    release("rollback", root=root)
    links = shown(root)
    assert (links["current"]["release"], links["previous"]["release"], links["next"]) == (accepted, second, None)
    assert os.readlink(f"{root}/current") == accepted and os.path.isdir(f"{root}/{second}")


def test_a_release_changed_after_staging_is_not_what_accept_makes_current(first):
    """Staged again from the current release's own wheels (no wheelhouse named), then changed by the build
    user in staged/: accept takes root's copy made at stage (preview/ID), its digest checked again, so the
    change never runs; root's copy not what was staged is refused, and nothing moves."""
    root, accepted = first
    if shown(root)["current"] is None:
        release("accept", root=root)
    accepted = shown(root)["current"]["release"]
    second = stage_from_current(root)
    assert second != accepted and shown(root)["next"]["release"] == second
    inside = "lib/python3.11/site-packages/ocx/__init__.py"
    subprocess.run(["setpriv", "--reuid=ocx-build", "--regid=ocx-build", "--clear-groups", "sh", "-c",
                    f"echo 'import os' >> {root}/staged/{second}/{inside}"], check=True)
    roots_copy = Path(f"{root}/preview/{second}/{inside}")
    made = roots_copy.read_bytes()
    said = release("accept", "--dry-run", root=root).stdout
    assert f"would take root's copy made at stage (preview/{second})" in said, said
    roots_copy.write_bytes(made + b"# not what was staged\n")
    refused = release("accept", root=root, check=False)
    assert refused.returncode == 1, refused
    assert f"digest: {second}'s copy made at stage is not what was staged" in refused.stderr, refused
    links = shown(root)
    assert links["current"]["release"] == accepted and links["next"]["release"] == second
    assert not os.path.exists(f"{root}/{second}") and not [n for n in os.listdir(root) if n.endswith(".partial")]
    roots_copy.write_bytes(made)
    release("accept", root=root)
    assert shown(root)["current"]["release"] == second and not os.path.exists(f"{root}/preview/{second}")
    assert Path(f"{root}/{second}/{inside}").read_bytes() == made  # not the build user's line


HOSTILE = '''import os, socket, sys
tried = []
for path in {paths!r}:
    try:
        with open(path, "w") as out:
            out.write("built")
        tried.append("WROTE " + path)
    except OSError as error:
        tried.append(f"denied write {{path}}: {{error.strerror}}")
for path in {secrets!r}:
    try:
        open(path).read()
        tried.append("READ " + path)
    except OSError as error:
        tried.append(f"denied read {{path}}: {{error.strerror}}")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    tried.append("CONNECTED")
except OSError as error:
    tried.append(f"denied connect: {{error.strerror or error}}")
print("; ".join(tried))
sys.exit(0 if any(not line.startswith("denied") for line in tried) else 3)
'''


def test_a_build_that_reaches_for_the_network_or_outside_staged_fails_and_stages_nothing(node, tmp_path):
    """The smoke runs the staged release's own code, as the build user, in the build's unit (D48): here
    an `ocx` whose `ocx version` tries to write outside staged/, read the node's secrets and reach the
    node's Fossil server. Each try is denied, so it fails and nothing is staged."""
    root = fresh_root()
    outside = [f"{root}/planted", "/var/lib/ocx/planted", "/etc/ocx/planted", "/usr/local/planted",
               "/opt/ocx/planted", "/root/planted", f"{node.config.state_dir}/planted"]
    secrets_ = [str(node.config.password_file), f"/etc/ocx/{node.name}.json"]
    port = int(node.config.url.rsplit(":", 1)[1].split("/")[0])
    program = HOSTILE.format(paths=outside, secrets=secrets_, port=port).encode()
    wheel = make_wheel(tmp_path, "0.1.0", {"ocx/__init__.py": b"", "ocx/cli/__init__.py": b"",
                                           "ocx/cli/launch.py": program}, [], {})
    refused = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, root=root, check=False)
    assert refused.returncode == 1 and "smoke: version failed: exit 3" in refused.stderr, refused
    for path in outside:
        assert f"denied write {path}" in refused.stderr and not os.path.exists(path), (path, refused.stderr)
    for path in secrets_:
        assert f"denied read {path}" in refused.stderr, (path, refused.stderr)
    assert "denied connect" in refused.stderr, refused.stderr
    assert shown(root)["next"] is None and os.listdir(f"{root}/staged") == []


def test_a_checkin_without_a_passing_ci_verdict_is_refused_naming_it(node):
    root = fresh_root()
    checkin = Committer(node, f"release-{secrets.token_hex(2)}").commit({"pyproject.toml": "[project]\n"})
    refused = release("stage", "--checkin", checkin, "--node", node.name, root=root, check=False)
    assert refused.returncode == 1, refused
    assert f"checkin: {checkin} has no counted ci verdict" in refused.stderr, refused.stderr
    assert not os.path.exists(f"{root}/staged")  # refused before anything was built


def test_a_checkin_whose_build_needs_a_wheel_nobody_gave_is_refused_naming_it(node):
    """A check-in that passed its CI (D25) is written out by the Fossil layer and built offline; its
    pyproject.toml asks for a build backend the wheelhouse lacks, and the refusal names it (D45)."""
    root = fresh_root()
    checkin, _ = passed_checkin(node, f"release-{secrets.token_hex(2)}", FLIT_TREE)
    refused = release("stage", "--checkin", checkin[:12], "--node", node.name, "--wheelhouse", WHEELHOUSE_INSIDE,
                      root=root, check=False)
    assert refused.returncode == 1, refused
    assert "build: dependency: flit_core>=3.9 is in no wheel given" in refused.stderr, refused.stderr
    assert shown(root)["next"] is None and os.listdir(f"{root}/staged") == []


def test_a_checkin_that_passed_its_ci_is_built_from_its_tree_and_staged(node):
    """The whole path of a check-in (D45): the gate, its tree written by the Fossil layer, OCX's wheel built
    from it in the build's unit (its backend is in the tree: the image holds no `wheel`), smoked, next."""
    root = fresh_root()
    checkin, _ = passed_checkin(node, f"release-{secrets.token_hex(2)}", ocx_tree(SRC))
    done = release("stage", "--checkin", checkin[:16], "--node", node.name, "--wheelhouse", WHEELHOUSE_INSIDE,
                   root=root)
    staged = done.stdout.strip().splitlines()[-1].removeprefix("next: ")
    assert staged.startswith(checkin[:16] + "-"), done.stdout
    links = shown(root)
    assert links["next"]["checkin"] == checkin and links["next"]["smoke"]["version"].startswith("passed: ocx 0.1.0")
    assert [w.name for w in Path(f"{root}/staged/{staged}/wheels").glob("ocx-*.whl")] == ["ocx-0.1.0-py3-none-any.whl"]


def building() -> list[str]:
    return [line.split()[0] for line in systemctl("list-units", "--plain", "--no-legend", "--state=active",
                                                   "ocx-release-build-*.service").splitlines() if line.strip()]


def test_a_stage_killed_while_it_builds_is_swept_by_the_next(wheels):
    """A cut point of stage (D46): the command killed while its build's unit runs. Nothing is offered, and
    the next stage stops the orphaned build, removes what it left in staged/, and stages whole."""
    root = fresh_root()
    wheel = str(next(wheels.glob("ocx-*.whl")))
    command = [PYTHON, "-m", "ocx.cli.launch", "release", "stage", "--wheel", wheel, "--wheelhouse",
               WHEELHOUSE_INSIDE, "--root", root]
    killed = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        orphan = wait_for(building, 120, 0.2, "the build's unit")
    finally:
        killed.kill()
        killed.wait(timeout=30)
    assert shown(root)["next"] is None
    assert building() == orphan  # the unit outlives the command that started it
    done = release("stage", "--wheel", wheel, "--wheelhouse", WHEELHOUSE_INSIDE, root=root)
    staged = done.stdout.strip().splitlines()[-1].removeprefix("next: ")
    assert shown(root)["next"]["release"] == staged and not set(orphan) & set(building())
    assert sorted(os.listdir(f"{root}/staged")) == [staged, f"{staged}.json"]
    assert sorted(os.listdir(root)) == [".lock", "next", "preview", "staged"]  # preview: root's copy of next


def test_a_release_that_cannot_read_the_live_configuration_is_not_staged(node, tmp_path):
    root = fresh_root()
    broken = b"\n\ndef load_file(config_file):\n    raise ValueError('this release reads no configuration')\n"
    wheel = working_tree_wheel(SRC, tmp_path, appended={"ocx/node/config.py": broken})
    refused = release("stage", "--wheel", str(wheel), "--wheelhouse", WHEELHOUSE_INSIDE, root=root, check=False)
    assert refused.returncode == 1 and "smoke: configuration failed: exit 1" in refused.stderr, refused
    assert "this release reads no configuration" in refused.stderr, refused.stderr
    assert shown(root)["next"] is None and os.listdir(f"{root}/staged") == []
