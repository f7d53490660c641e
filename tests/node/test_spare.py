"""A session's home made ahead by the node (node/spare.py), on a real server:
once put in place and made the run user's, it is the home a preparation
would have made (D16, C5), and it is placed once, never over an earlier
attempt's home, and only when made from the clone a run would copy."""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from node.test_template import Config, served  # noqa: F401 (a fixture: a real server of this module's own)
from ocx.fossil.repository import Repository
from ocx.node import spare, template
from ocx.node.unit.prepare import Preparation, make_home, parse

pytestmark = pytest.mark.fossil


@pytest.fixture
def config(served, tmp_path) -> Config:
    served.commit("alice", f"ahead-{tmp_path.name}.txt", "made ahead\n")
    made = Config(str(served.path), served.base_url, tmp_path / "state", served.passwords["bob"])
    made.state_dir.mkdir()
    template.current(made)  # as the idle node keeps it: through the newest receipt
    return made


def clone_and_mark(config: Config) -> tuple[Path, int]:
    path = template.template_path(config)
    return path, template.held(path)


def step_for(config: Config, home: Path, *, ahead: bool) -> Preparation:
    fossil_home = home.with_name(home.name + "-fossil-home")
    fossil_home.mkdir(parents=True, exist_ok=True)  # prepare_run makes it
    return Preparation(config.repository, config.url, "alice", home, home.with_name(home.name + "-marks"), home.name,
                       fossil_home, template.template_path(config), ahead=ahead)


def fossil(checkout: Path, *args: str) -> str:
    done = subprocess.run(["fossil", *args], cwd=checkout, capture_output=True, text=True, timeout=60,
                          env={"HOME": str(checkout.parent), "PATH": "/usr/bin:/bin", "USER": "alice"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def checked_out(checkout: Path) -> str:
    return next(line.split()[1] for line in fossil(checkout, "status").splitlines() if line.startswith("checkout:"))


def test_a_home_made_ahead_is_the_home_a_preparation_would_make(served, config, tmp_path) -> None:
    clone, mark = clone_and_mark(config)
    assert spare.make(clone, mark, login="bob", lineage=template.lineage(clone)) is not None
    ahead, fresh = tmp_path / "runs" / "ahead", tmp_path / "runs" / "fresh"
    assert spare.place(clone, mark, ahead) and spare.placed(ahead)

    password = served.passwords["alice"]
    made_ahead = make_home(step_for(config, ahead, ahead=True), lambda: password)
    made_fresh = make_home(step_for(config, fresh, ahead=False), lambda: password)

    # The same check-in, from a clone that names the home's own files and is alice's alone.
    assert checked_out(made_ahead) == checked_out(made_fresh)
    assert f"repository:   {ahead / 'repo.fossil'}" in fossil(made_ahead, "status")
    with Repository(ahead / "repo.fossil") as own, Repository(clone) as node_clone:
        assert own.server_code != node_clone.server_code  # C1: a clone of its own
        assert [u.login for u in own.users() if "s" in u.capabilities] == ["alice"]
    ckouts = fossil(made_ahead, "sql", "SELECT name FROM config WHERE name GLOB 'ckout:*'")
    assert ckouts.split() == [f"'ckout:{made_ahead}/'"]

    # It works as the run's: a commit there reaches the server as alice (autosync, her kept password).
    (made_ahead / "from-ahead.txt").write_text("committed from a home made ahead\n")
    fossil(made_ahead, "add", "from-ahead.txt")
    fossil(made_ahead, "commit", "-m", "from a home made ahead", "--no-warnings")
    with served.repository() as repository:
        newest = repository.checkin(repository.resolve(checked_out(made_ahead)))
    assert newest.sender.login == "alice"


def test_a_spare_is_placed_once_and_never_over_an_earlier_home(config, tmp_path) -> None:
    clone, mark = clone_and_mark(config)
    spare.make(clone, mark, login="bob", lineage=template.lineage(clone))
    runs = tmp_path / "runs"
    assert spare.place(clone, mark, runs / "first")
    assert not spare.place(clone, mark, runs / "second")  # taken
    assert not (runs / "second").exists()

    spare.make(clone, mark, login="bob", lineage=template.lineage(clone))
    earlier = runs / "earlier"
    earlier.mkdir()
    (earlier / "left-by-its-run").write_text("x")
    assert not spare.place(clone, mark, earlier)  # an attempt's home: its preparation empties it
    assert sorted(p.name for p in earlier.iterdir()) == ["left-by-its-run"]
    assert not spare.placed(earlier)
    assert spare.place(clone, mark, runs / "next")  # the spare was left for the next


def test_only_a_spare_of_the_clone_a_run_would_copy_is_placed(config, tmp_path) -> None:
    clone, mark = clone_and_mark(config)
    spare.make(clone, mark - 1, login="bob", lineage=template.lineage(clone))  # as if made before the last pull
    assert not spare.place(clone, mark, tmp_path / "runs" / "home")
    spare.make(clone, mark, login="bob", lineage=template.lineage(clone))
    assert sorted(p.name for p in spare.spares_of(clone).iterdir()) == [spare.spare_name(mark)]  # the old one gone


def test_a_home_not_as_placed_is_emptied_and_made_afresh(served, config, tmp_path) -> None:
    """Told a home was made ahead, the preparation still checks it is exactly that."""
    home = tmp_path / "runs" / "odd"
    (home / "checkout").mkdir(parents=True)
    (home / "repo.fossil").write_text("not a clone")
    (home / "extra").write_text("x")
    assert not spare.placed(home)
    checkout = make_home(step_for(config, home, ahead=True), lambda: served.passwords["alice"])
    assert not (home / "extra").exists()
    assert checked_out(checkout)


def tree(checkout: Path) -> dict[str, bytes]:
    return {str(p.relative_to(checkout)): p.read_bytes() for p in sorted(checkout.rglob("*"))
            if p.is_file() and p.name != ".fslckout"}


def test_a_checkin_runs_home_moves_a_checkout_made_ahead_to_its_checkin(served, config, tmp_path) -> None:
    """A check-in just received: the node pulls its clone for runs, places the home made from the
    version before, and the preparation copies the pulled clone over it and moves the checkout."""
    clone, before = clone_and_mark(config)
    spare.make(clone, before, login="bob", lineage=template.lineage(clone))
    checkin = served.commit("alice", f"pushed-{tmp_path.name}.txt", "the check-in's\n", branch=f"ci-{tmp_path.name}")
    template.current(config)  # the node's pull for the check-in run (checkin_runs.start_checkin)
    after = template.held(clone)
    assert after > before and spare.older(clone, after, template.lineage(clone)) == before
    ahead, fresh = tmp_path / "runs" / "ahead", tmp_path / "runs" / "fresh"
    assert spare.place(clone, before, ahead)

    def step(home: Path, placed: bool) -> Preparation:
        made = step_for(config, home, ahead=placed)
        return Preparation(**{**made.__dict__, "checkin": checkin})

    made_ahead = make_home(step(ahead, True), lambda: served.passwords["alice"])
    made_fresh = make_home(step(fresh, False), lambda: served.passwords["alice"])
    with Repository(ahead / "repo.fossil") as own:
        assert own.resolve(checked_out(made_ahead)) == checkin  # exactly the check-in (D16)
        assert own.server_code != template.lineage(clone)  # C1: a clone of its own
    assert tree(made_ahead) == tree(made_fresh) and f"pushed-{tmp_path.name}.txt" in tree(made_ahead)
    assert fossil(made_ahead, "changes").strip() == ""  # Fossil sees the check-in itself, nothing edited


def test_a_spare_of_a_runs_clone_made_again_is_never_offered_to_a_checkin_run(config) -> None:
    """A clone made again has record ids of its own: a checkout made from the old one cannot be moved."""
    clone, mark = clone_and_mark(config)
    spare.make(clone, mark, login="bob", lineage="0" * 40)
    assert spare.older(clone, mark, template.lineage(clone)) is None
    assert spare.older(clone, mark, "0" * 40) == mark


def test_a_checkin_runs_preparation_waits_for_the_nodes_pull_started_after_it(served, config, tmp_path,
                                                                               capsys) -> None:
    """The node starts a check-in run's unit before it pulls (checkin_runs.start_checkin): the
    preparation waits for the pull's mark, then takes the home made ahead to the check-in."""
    clone, before = clone_and_mark(config)
    spare.make(clone, before, login="bob", lineage=template.lineage(clone))
    checkin = served.commit("alice", f"waited-{tmp_path.name}.txt", "after a wait\n", branch=f"w-{tmp_path.name}")
    with served.repository() as repository:
        received = repository.sender(checkin).rcvid
    home = tmp_path / "runs" / "waiting"
    assert spare.place(clone, before, home)
    made = step_for(config, home, ahead=True)
    step = Preparation(**{**made.__dict__, "checkin": checkin, "wait_for": received})
    assert parse(step.argv()) == step  # the wait reaches the unit's step as given
    pulling = threading.Timer(0.5, lambda: template.current(config))  # the node's pass, after the start
    pulling.start()
    try:
        checkout = make_home(step, lambda: served.passwords["alice"])
    finally:
        pulling.join()
    said = capsys.readouterr().out
    assert f"the node's clone pulled through receipt {received}, waited for" in said, said
    assert f"checkout moved to {checkin}" in said, said
    with Repository(home / "repo.fossil") as own:
        assert own.resolve(checked_out(checkout)) == checkin


def test_a_preparation_whose_pull_never_comes_pulls_itself(served, config, tmp_path, capsys) -> None:
    """The node's pull failed or was cut off: after its wait the run's own copy pulls, as its user."""
    checkin = served.commit("alice", f"never-{tmp_path.name}.txt", "never pulled\n", branch=f"n-{tmp_path.name}")
    with served.repository() as repository:
        received = repository.sender(checkin).rcvid
    home = tmp_path / "runs" / "never"
    made = step_for(config, home, ahead=False)
    checkout = make_home(Preparation(**{**made.__dict__, "checkin": checkin, "wait_for": received}),
                         lambda: served.passwords["alice"], wait=0.5)  # the unit's step waits prepare.WAIT_FOR_PULL
    said = capsys.readouterr().out
    assert f"not pulled through receipt {received}" in said and "pulled what the node's clone lacked" in said, said
    with Repository(home / "repo.fossil") as own:
        assert own.resolve(checked_out(checkout)) == checkin
