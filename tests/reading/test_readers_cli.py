"""The readers' command line (cli/cli_reading.py), on a real served
repository: one definition, started without Typer or pydantic, its help and
errors as clear from `ocx` as through the whole command line; and every
reader keeping a sender's verdicts per objective (D25)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ocx.protocol.verdict_rules import VERDICT_TAGS, latest_by_sender
from ocx.reading.verdicts import _events

pytestmark = pytest.mark.fossil

HEAVY = ("typer", "pydantic", "rich", "click")


def run(*argv: str, entry: str = "ocx.cli.launch") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", entry, *argv], capture_output=True, text=True, timeout=120)


def test_queue_and_verdicts_start_without_typer_or_pydantic(judged) -> None:
    """Only a verdict naming a record needs the message models (pydantic): `later` has none."""
    probe = ("import sys\nfrom ocx.cli import launch\nsys.argv = ['ocx', *sys.argv[1:]]\n"
             "try:\n    launch.main()\nexcept SystemExit as done:\n    code = done.code\n"
             f"print(code, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)")
    for argv in (["queue", "dev", "--newest", "1", "-R", str(judged.path)], ["verdicts", judged.later[:12], "-R", str(judged.path)]):
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
        assert done.stderr.strip().splitlines()[-1] == "0 []", (argv, done.stderr)
        assert done.stdout  # it did read and print


def test_ocx_starts_on_exactly_the_readers_defined() -> None:
    from ocx.cli import launch
    from ocx.cli.cli_reading import parsers

    assert set(launch.READERS) == set(parsers())


def test_help_names_every_option_from_ocx_and_through_the_whole_command_line() -> None:
    for entry in ("ocx.cli.launch", "ocx.cli.cli"):
        shown = run("queue", "--help", entry=entry)
        assert shown.returncode == 0, shown.stderr
        for words in ("usage: ocx queue", "BRANCH", "-R FILE, --repository FILE", "--at-node NAME", "--json",
                      "--newest N", "(0: all; default 50)", "oldest first"):
            assert words in shown.stdout, (entry, words)
    listing = run("--help", entry="ocx.cli.cli").stdout
    assert "verdicts" in listing and "Every sender's latest" in listing and "activity" in listing


def test_errors_name_what_is_wrong_with_usage_exit_2() -> None:
    for entry in ("ocx.cli.launch", "ocx.cli.cli"):
        missing = run("queue", entry=entry)
        assert missing.returncode == 2 and "the following arguments are required: BRANCH" in missing.stderr
        assert "Try 'ocx queue --help' for help." in missing.stderr
        below = run("queue", "dev", "--newest", "-1", entry=entry)
        assert below.returncode == 2 and "argument --newest: -1 is below 0" in below.stderr
        unknown = run("verdicts", "abc", "--colour", entry=entry)
        assert unknown.returncode == 2 and "unrecognized arguments: --colour" in unknown.stderr


def test_the_whole_command_line_forwards_a_reader_as_given(judged) -> None:
    direct = run("queue", "dev", "-R", str(judged.path), "--json", "--newest", "2")
    forwarded = run("queue", "dev", "-R", str(judged.path), "--json", "--newest", "2", entry="ocx.cli.cli")
    assert direct.returncode == forwarded.returncode == 0, forwarded.stderr
    assert json.loads(direct.stdout) == json.loads(forwarded.stdout) and json.loads(direct.stdout)["total"] == 3


def test_one_senders_fail_against_one_objective_is_not_hidden_by_its_pass_against_another(judged) -> None:
    """D25 amended: grace's `ci` fail against TESTS.md, then her `ci` pass
    against LINT.md (Fossil shows only the pass) are two verdicts; the
    queue, `ocx verdicts` and the merge gate all read the check-in failed."""
    from ocx.reading.verdicts import passed

    served = judged.served
    checkin = served.commit("bob", "two.txt", "two objectives\n", branch="two-objectives")
    served.clone("grace").tag(checkin, "ci", "fail: 2 failed (against TESTS.md)")
    served.clone("grace").tag(checkin, "ci", "pass: clean (against LINT.md)")
    answer = json.loads(run("queue", "two-objectives", "-R", str(judged.path), "--json").stdout)
    (entry,) = answer["checkins"]
    assert entry["outcome"] == "fail"
    assert sorted((v["objective"], v["judgement"]) for v in entry["counted"]) == [("LINT.md", "pass"), ("TESTS.md", "fail")]
    readable = run("queue", "two-objectives", "-R", str(judged.path)).stdout
    assert "failed (2 counted verdicts)" in readable and "against TESTS.md" in readable and "against LINT.md" in readable
    shown = run("verdicts", checkin[:12], "-R", str(judged.path)).stdout
    assert shown.strip().endswith("2 of 2 count: failed (D25)"), shown
    with served.repository() as repository:
        assert not passed(repository, checkin)
        whole = repository.tag_histories([checkin], VERDICT_TAGS)[checkin]
    assert len(latest_by_sender(_events(whole))) == 2
