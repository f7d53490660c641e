"""A node adopting a long history stays clonable while its git mirror's first update runs (D49, D26).

On click.fossil with 20,000 posts (bench/history.py) a person's clone failed for a minute after the
adoption ("server returned an error", "database is locked"), the mirror's first update running. Its
copy was not what held the served file (Fossil's clone of a file copies it without a lock): Fossil's
backoffice gave the hook `ocx node init` had just added every artifact received in the history's
last day, describing each inside one write transaction (35 s of CPU for its 10,000 tag changes, most
replaced by later ones, which Fossil looks for in every cluster). Without admin.start_hooks_from_now
this test's clones failed so ("server returned an error - clone aborted" after 33 s); with it the
longest took 2.3 s. Here a history received within the day is adopted
by a second node in the container, and a login clones it over and over from the server's start
until the mirror's first update has ended: every clone succeeds within a bound, and the mirror
ends holding every check-in of the repository.
"""
from __future__ import annotations

import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ocx.fossil import admin
from ocx.fossil.program import run_fossil
from ocx.fossil.repository import Repository
from ocx.fossil.sync import CallerClone
from ocx.node.host_paths import GIT_SERVED_NAME, git_served_root
from ocx.node_service.git_update import unit_name

from .harness import ocx, systemctl, wait_for

pytestmark = pytest.mark.systemd

NAME, PORT = "gitadopt", 8193
REPOSITORY = Path(f"/var/lib/ocx-fossil/{NAME}.fossil")
COMMITS, FILES = 500, 9
# Tag changes on a few check-ins, each replaced by a later one of its name, in a repository with clusters:
# Fossil describes each replaced one by reading every cluster (hook.c, describe_artifacts), 35 s for 6,000
# on an idle core, the bench history's verdicts alike.
TAG_CHANGES, TAGGED = 6_000, 5
CLONE_SECONDS = 60.0  # one clone of a few MB on a busy 2-core CI machine (about 5 s when quiet)
UPDATE_SECONDS = 900.0
UNITS = [f"ocx-{kind}@{NAME}.{suffix}" for kind, suffix in
         (("fossil", "service"), ("node", "socket"), ("node", "path"), ("node", "service"), ("tools", "service"),
          ("page", "socket"), ("page", "service"), ("check", "service"))]


def fast_import_stream(first: int, last: int) -> str:
    """Commits FIRST..LAST of one branch, each changing FILES files (new blobs), for `fossil import --git`."""
    lines: list[str] = []
    for n in range(first, last + 1):
        mark = n * (FILES + 1)
        for f in range(FILES):
            data = f"commit {n} file {f}\n"
            lines.append(f"blob\nmark :{mark + f}\ndata {len(data)}\n{data}")
        message = f"commit {n}\n"
        lines.append(f"commit refs/heads/master\nmark :{mark + FILES}\n"
                     f"committer dev <dev@example.org> {1_700_000_000 + n} +0000\ndata {len(message)}\n{message}")
        if n > first:  # the second receipt's first commit starts a root of its own: two leaves
            lines.append(f"from :{mark - 1}\n")
        lines += [f"M 100644 :{mark + f} f{f}.txt\n" for f in range(FILES)]
        lines.append("\n")
    return "".join(lines)


def tag_changes() -> str:
    """TAG_CHANGES annotated tags for `fossil import --git`, TAGGED names on the TAGGED newest commits."""
    lines = []
    for n in range(TAG_CHANGES):
        mark = (COMMITS - n % TAGGED) * (FILES + 1) + FILES
        message = f"verdict {n}\n"
        lines.append(f"tag audited{n % TAGGED}\nfrom :{mark}\ntagger dev <dev@example.org> {1_700_100_000 + n} +0000\n"
                     f"data {len(message)}\n{message}\n")
    return "".join(lines)


def history(home: Path) -> None:
    """REPOSITORY: a first check-in, then the rest and the tag changes in a second receipt (an incremental
    import), both now, and clusters made: the hook's first run (Fossil's hook.c: the receipts within a day
    of the newest) describes the second's."""
    run_fossil(["import", "--git", str(REPOSITORY)], input=fast_import_stream(1, 1), home=home, user="admin")
    run_fossil(["import", "--git", "--incremental", str(REPOSITORY)],
               input=fast_import_stream(2, COMMITS) + tag_changes(), home=home, user="admin", timeout=600)
    run_fossil(["rebuild", "--cluster", str(REPOSITORY)], home=home, user="admin", timeout=600)


@pytest.fixture
def adopted(tmp_path):
    from ocx.setup.account import ensure

    home = tmp_path / "home"
    server, _ = ensure("fossil", str(REPOSITORY.parent))
    REPOSITORY.unlink(missing_ok=True)
    history(home)
    admin_password = admin.set_random_password(REPOSITORY, "admin", home=home)
    reader = f"cl-{secrets.token_hex(2)}"
    password = admin.create_user(REPOSITORY, reader, "gio", f"{reader}@test", home=home)
    shutil.chown(REPOSITORY, server.name, server.name)
    secret = Path(f"/etc/ocx/{NAME}.admin-password")
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(admin_password + "\n")
    secret.chmod(0o600)
    yield home, reader, password
    subprocess.run(["systemctl", "disable", "--now", *UNITS, unit_name(NAME)], capture_output=True, timeout=120)


def update_ended() -> bool:
    return systemctl("is-active", unit_name(NAME)).strip() not in ("active", "activating", "deactivating")


def test_a_clone_while_the_adopted_historys_first_mirror_update_runs_succeeds(adopted, tmp_path):
    home, reader, password = adopted
    url = f"http://127.0.0.1:{PORT}"
    clones: list[tuple[float, float, str]] = []  # (start, seconds, error)
    stop = threading.Event()

    def clone_over_and_over() -> None:
        count = 0
        while not stop.is_set():
            count += 1
            began = time.monotonic()
            try:
                CallerClone.create(tmp_path / f"c{count}.fossil", url, reader, password, home=home)
                error = ""
            except Exception as failure:  # each clone's outcome is the test's finding
                error = str(failure)[-300:]
            clones.append((began, time.monotonic() - began, error))
            (tmp_path / f"c{count}.fossil").unlink(missing_ok=True)

    said: list[str] = []
    init = threading.Thread(target=lambda: said.append(ocx("node", "init", "--name", NAME, "--repository",
                                                           str(REPOSITORY), "--port", str(PORT), check=False,
                                                           timeout=600).stdout))
    init.start()
    cloner = threading.Thread(target=clone_over_and_over)
    update: list[float] = []  # when the mirror's first update was seen running, then seen ended
    try:
        wait_for(lambda: systemctl("is-active", f"ocx-fossil@{NAME}.service").strip() == "active", 120, 0.1,
                 "the adopted repository's server")
        cloner.start()
        deadline = time.monotonic() + UPDATE_SECONDS
        # Until the update ended and a clone begun after its end has ended too.
        while not (len(update) == 2 and clones and clones[-1][0] > update[1]):
            assert time.monotonic() < deadline, f"the mirror's first update: {update}, {said}"
            if len(update) == 0 and not update_ended() or len(update) == 1 and update_ended():
                update.append(time.monotonic())
            time.sleep(0.2)
    finally:
        stop.set()
        if cloner.is_alive():
            cloner.join(CLONE_SECONDS * 3)
        init.join(600)
    failed = [(round(began - update[0], 1), round(seconds, 1), error) for began, seconds, error in clones
              if error or seconds > CLONE_SECONDS]
    assert not failed, failed  # (from the update's start, seconds, what failed)
    assert any(began < update[1] and began + seconds > update[0] for began, seconds, _ in clones), (clones, update)
    print(f"{len(clones)} clones, the longest {max(c[1] for c in clones):.1f} s")

    with Repository(REPOSITORY) as repository:
        checkins = repository._one("SELECT count(*) FROM event WHERE type='ci'")[0]
    served = Path(git_served_root(NAME)) / GIT_SERVED_NAME
    held = subprocess.run(["git", "-C", str(served), "rev-list", "--all", "--count"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert int(held) == checkins == COMMITS  # every check-in, the mirror current

