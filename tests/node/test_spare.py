"""Runs' homes made ahead by the node (node/spare.py), on a real server:
once put in place and made the run user's, each is the home a preparation
would have made (D16, C5); each is placed once, never over an earlier
attempt's home, only from the runs' clone's own lineage, and for a session
only while its checkout is still the tip; the node keeps as many as its
`spare_homes`."""
from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest

from node.test_template import Config
from ocx.fossil.copies import CHANGED_CHUNK
from ocx.fossil.repository import Repository
from ocx.node import spare, template
from ocx.run_steps.prepare import Preparation, make_home, parse

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


def made(clone: Path, mark: int, *, lineage: str | None = None, count: int = 1, since: int = -1) -> Path | None:
    return spare.make(clone, mark, login="bob", lineage=lineage or template.lineage(clone), count=count, since=since)


def take(clone: Path, home: Path, upto: int, since: int = -1) -> int | None:
    return spare.take(clone, home, lineage=template.lineage(clone), upto=upto, since=since)


def step_for(config: Config, home: Path, *, ahead: int | None) -> Preparation:
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
    assert made(clone, mark) is not None
    ahead, fresh = tmp_path / "runs" / "ahead", tmp_path / "runs" / "fresh"
    assert take(clone, ahead, mark) == mark and spare.placed(ahead)

    password = served.passwords["alice"]
    made_ahead = make_home(step_for(config, ahead, ahead=mark), lambda: password)
    made_fresh = make_home(step_for(config, fresh, ahead=None), lambda: password)

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
    made(clone, mark)
    runs = tmp_path / "runs"
    assert take(clone, runs / "first", mark) == mark
    assert take(clone, runs / "second", mark) is None  # taken: the pool held one
    assert not (runs / "second").exists()

    made(clone, mark)
    earlier = runs / "earlier"
    earlier.mkdir()
    (earlier / "left-by-its-run").write_text("x")
    assert take(clone, earlier, mark) is None  # an attempt's home: its preparation empties it
    assert sorted(p.name for p in earlier.iterdir()) == ["left-by-its-run"]
    assert not spare.placed(earlier)
    assert take(clone, runs / "next", mark) == mark  # the spare was left for the next


def test_the_node_keeps_as_many_as_it_is_told_and_each_is_taken_once(config, tmp_path) -> None:
    clone, mark = clone_and_mark(config)
    kept = [made(clone, mark, count=3) for _ in range(4)]
    assert all(kept[:3]) and kept[3] is None  # the fourth call: three are there
    assert len({path.name for path in kept[:3]}) == 3 and [m for m, _ in spare.pool(clone)] == [mark] * 3
    homes = [tmp_path / "runs" / f"home-{i}" for i in range(4)]
    assert [take(clone, home, mark) for home in homes] == [mark, mark, mark, None]
    assert all(spare.placed(home) for home in homes[:3]) and not homes[3].exists()
    assert spare.pool(clone) == [] and made(clone, mark, count=3) is not None  # made again when idle


def test_a_spare_is_only_placed_for_a_version_of_the_clone_it_could_serve(config, tmp_path) -> None:
    """Never one made after the clone the run copies; for a session, never one made before the tip
    last moved (SINCE: its checkout is another check-in's); never one of another lineage."""
    clone, mark = clone_and_mark(config)
    made(clone, mark - 1)  # as if made before the last pull
    home = tmp_path / "runs" / "home"
    assert take(clone, home, mark - 2) is None  # made after what this run copies
    assert take(clone, home, mark, since=mark) is None  # made before the tip moved
    assert not home.exists()
    made(clone, mark, lineage="0" * 40, count=2)
    assert take(clone, home, mark, since=mark) is None  # a clone made again: its record ids are its own
    assert made(clone, mark, count=1, since=mark) is not None
    assert [m for m, _ in spare.pool(clone)] == [mark]  # the outdated one and the other lineage's gone
    assert take(clone, home, mark, since=mark) == mark


def test_a_home_not_as_placed_is_emptied_and_made_afresh(served, config, tmp_path) -> None:
    """Told a home was made ahead, the preparation still checks it is exactly that."""
    home = tmp_path / "runs" / "odd"
    (home / "checkout").mkdir(parents=True)
    (home / "repo.fossil").write_text("not a clone")
    (home / "extra").write_text("x")
    assert not spare.placed(home)
    checkout = make_home(step_for(config, home, ahead=1), lambda: served.passwords["alice"])
    assert not (home / "extra").exists()
    assert checked_out(checkout)


def tree(checkout: Path) -> dict[str, bytes]:
    return {str(p.relative_to(checkout)): p.read_bytes() for p in sorted(checkout.rglob("*"))
            if p.is_file() and p.name != ".fslckout"}


def test_a_checkin_runs_home_moves_a_checkout_made_ahead_to_its_checkin(served, config, tmp_path,
                                                                        capsys) -> None:
    """A check-in just received: the node pulls its clone for runs, places the home made from the
    version before, and the preparation writes what changed of the pulled clone over it (copy_changed:
    a few chunks, not the whole history) and moves the checkout."""
    clone, before = clone_and_mark(config)
    made(clone, before)
    checkin = served.commit("alice", f"pushed-{tmp_path.name}.txt", "the check-in's\n", branch=f"ci-{tmp_path.name}")
    template.current(config)  # the node's pull for the check-in run (checkin_runs.start_checkin)
    after = template.held(clone)
    ahead, fresh = tmp_path / "runs" / "ahead", tmp_path / "runs" / "fresh"
    assert after > before and take(clone, ahead, after) == before  # a check-in run takes an older one

    def step(home: Path, placed: int | None) -> Preparation:
        step = step_for(config, home, ahead=placed)
        return step._replace(checkin=checkin)

    made_ahead = make_home(step(ahead, before), lambda: served.passwords["alice"])
    said = re.search(r"its clone made the node's \((\d+) MB, (\d+) chunks changed\)", capsys.readouterr().out)
    assert said is not None
    assert 0 < int(said[2]) < (ahead / "repo.fossil").stat().st_size // CHANGED_CHUNK  # not the whole history
    made_fresh = make_home(step(fresh, None), lambda: served.passwords["alice"])
    with Repository(ahead / "repo.fossil") as own:
        assert own.resolve(checked_out(made_ahead)) == checkin  # exactly the check-in (D16)
        assert own.server_code != template.lineage(clone)  # C1: a clone of its own
    assert tree(made_ahead) == tree(made_fresh) and f"pushed-{tmp_path.name}.txt" in tree(made_ahead)
    assert fossil(made_ahead, "changes").strip() == ""  # Fossil sees the check-in itself, nothing edited


def test_a_session_after_a_burst_takes_a_home_made_before_it_with_the_newer_clone(served, config, tmp_path,
                                                                                  capsys) -> None:
    """Records arrived (forum posts, no check-in) and the node pulled its clone: a session takes the
    home made before them, its preparation copies the pulled clone over it, and the home is the one
    a fresh preparation makes from the pulled clone."""
    clone, before = clone_and_mark(config)
    made(clone, before)
    post = served.web("admin").new_thread(f"burst {tmp_path.name}", "a record's neighbour")
    template.current(config)
    after = template.held(clone)
    with served.repository() as repository:
        since = repository.newest_tip_change(after)
    assert before < after and since <= before  # the tip did not move: the spare's checkout is the tip
    ahead, fresh = tmp_path / "runs" / "ahead", tmp_path / "runs" / "fresh"
    assert take(clone, ahead, after, since=since) == before
    made_ahead = make_home(step_for(config, ahead, ahead=before), lambda: served.passwords["alice"])
    assert "its clone copied from the node's" in capsys.readouterr().out
    made_fresh = make_home(step_for(config, fresh, ahead=None), lambda: served.passwords["alice"])
    assert checked_out(made_ahead) == checked_out(made_fresh) and tree(made_ahead) == tree(made_fresh)
    with Repository(ahead / "repo.fossil") as own:
        assert own.holding([post]) == {post}  # what came before the run, as the pulled clone holds it
    assert fossil(made_ahead, "changes").strip() == ""


def test_a_check_in_moves_the_tip_and_a_post_does_not(served, config, tmp_path) -> None:
    """What a session's `since` is (start_stop.take_spare): the receipt of the newest check-in."""
    clone, before = clone_and_mark(config)
    checkin = served.commit("alice", f"tip-moves-{tmp_path.name}.txt", "a new tip\n")
    served.web("admin").new_thread(f"after {tmp_path.name}", "a post moves no tip")
    with served.repository() as repository:
        newest = repository.max_rcvid()
        moved = repository.sender(checkin).rcvid
        assert newest > moved > before and repository.newest_tip_change(newest) == moved
        assert repository.newest_tip_change(moved - 1) < moved


def test_a_checkin_runs_preparation_waits_for_the_nodes_pull_started_after_it(served, config, tmp_path,
                                                                               capsys) -> None:
    """The node starts a check-in run's unit before it pulls (checkin_runs.start_checkin): the
    preparation waits for the pull's mark, then takes the home made ahead to the check-in."""
    clone, before = clone_and_mark(config)
    made(clone, before)
    checkin = served.commit("alice", f"waited-{tmp_path.name}.txt", "after a wait\n", branch=f"w-{tmp_path.name}")
    with served.repository() as repository:
        received = repository.sender(checkin).rcvid
    home = tmp_path / "runs" / "waiting"
    assert take(clone, home, before) == before
    first = step_for(config, home, ahead=before)
    step = first._replace(checkin=checkin, wait_for=received)
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
    first = step_for(config, home, ahead=None)
    checkout = make_home(first._replace(checkin=checkin, wait_for=received),
                         lambda: served.passwords["alice"], wait=0.5)  # the unit's step waits prepare.WAIT_FOR_PULL
    said = capsys.readouterr().out
    assert f"not pulled through receipt {received}" in said and "pulled what the node's clone lacked" in said, said
    with Repository(home / "repo.fossil") as own:
        assert own.resolve(checked_out(checkout)) == checkin
