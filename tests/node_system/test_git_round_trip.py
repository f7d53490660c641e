"""The round trip through git (D49, D50, D21), on the real node `ocx node init` set up.

A person (a login with check-in rights, not an admin) clones the node's
repository with Fossil over HTTP and its /ext/git with the real `git`;
commits in git on the branch a CI record watches; brings the commit back
with `ocx git import BRANCH --clone THEIR.fossil` (docs/git-import.md) and
`fossil push -R THEIR.fossil`. The check-in reaches the node as that
person's, the CI record runs it, and its `ci` verdict is a note on the
check-in's commit after the person's next `git fetch`.
"""
from __future__ import annotations

import re
import secrets
import subprocess
from pathlib import Path

import pytest

from ocx.protocol.verdict import parse_verdict

from .harness import journal, ocx, wait_for
from .test_command_runs import ci_record, ci_verdicts, wait_open
from .test_git import UPDATE_SECONDS, git, url

pytestmark = pytest.mark.systemd

CI_SCRIPT = 'print("round trip: the check-in came back from git")\n'
CI_SECONDS = 120.0  # the CI run's unit on a busy 2-core machine; the record's own wall budget is below it


def commit_for(repo: Path, checkin: str) -> str | None:
    """The mirror's commit of CHECKIN after a fetch of every ref and the notes: the export ends
    each message with `FossilOrigin-Name: HASH` (docs/git-import.md)."""
    git("fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/notes/*:refs/notes/*", cwd=repo)
    found = git("log", "--remotes=origin", "--format=%H", "--fixed-strings", f"--grep=FossilOrigin-Name: {checkin}",
                cwd=repo).stdout.split()
    return found[0] if found else None


def test_a_commit_made_in_git_comes_back_as_its_authors_checkin_is_run_and_its_verdict_is_a_note(node, tmp_path):
    person = node.login(f"rt-{secrets.token_hex(2)}", "gio")  # check-in rights, no admin's
    branch = f"rt-{secrets.token_hex(3)}"
    record = node.post(ci_record(node, branch, budget={"wall": "1m", "memory": "64M"}))
    wait_open(node, record)

    work = tmp_path / "work"
    wait_for(lambda: git("ls-remote", url(node, person), check=False).returncode == 0, UPDATE_SECONDS, 0.5,
             "the node's mirror")
    git("clone", "-q", url(node, person), str(work))
    theirs = node.clone_of(person).path  # `fossil clone http://LOGIN@HOST/ THEIR.fossil`, after the git clone

    git("checkout", "-q", "-b", branch, "origin/master", cwd=work)
    (work / "ci.py").write_text(CI_SCRIPT)
    subject = f"round trip {secrets.token_hex(4)}"
    git("add", "ci.py", cwd=work)
    git("-c", "user.name=Someone Else", "-c", "user.email=else@example.org", "commit", "-qm", subject, cwd=work)

    imported = ocx("git", "import", branch, "--clone", str(theirs), "--git", str(work))
    made = re.findall(r"^made ([0-9a-f]{12}) from ", imported.stdout, re.MULTILINE)
    assert len(made) == 1, imported.stdout
    pushed = subprocess.run(["fossil", "push", "-R", str(theirs)], capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(node.home), "USER": person.name})
    assert pushed.returncode == 0 and "Error" not in pushed.stdout, pushed.stdout + pushed.stderr

    with node.repository() as repository:
        checkin = repository.resolve(made[0])
        assert repository.sender(checkin).login == person.name  # D21: sent as the person, whoever git named
        comment = repository._one("SELECT e.comment, e.user FROM event e JOIN blob b ON b.rid=e.objid"
                                  " WHERE b.uuid=?", (checkin,))
    assert comment == (subject, person.name), comment

    try:
        (tag,) = wait_for(lambda: ci_verdicts(node, checkin), CI_SECONDS, 0.5, "the CI record's verdict")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{journal(f'ocx-node@{node.name}.service')[-3000:]}") from None
    assert tag.sender.login == node.config.node_user
    verdict = parse_verdict(tag.value)
    assert verdict is not None and verdict.against == record, tag.value
    assert (verdict.judgement.value, verdict.reason) == ("pass", "round trip: the check-in came back from git")

    line = f"ci: pass by {node.config.node_user} against {record}: {verdict.reason}"

    def noted() -> str | None:
        commit = commit_for(work, checkin)
        shown = git("log", "--notes=ocx", "-1", commit, cwd=work).stdout if commit else ""
        return shown if line in shown else None

    try:
        shown = wait_for(noted, UPDATE_SECONDS, 0.3, "the verdict's note after a fetch")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{journal(f'ocx-git-{node.name}.service')[-3000:]}") from None
    assert subject in shown and f"FossilOrigin-Name: {checkin}" in shown, shown
    node.stop(record)
    assert node.response(record).outcome.value == "stopped"
