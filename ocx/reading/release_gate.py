"""The gate a check-in passes before it is staged as a release (D45): by D25, its counted
`ci` verdicts pass and none fails, read by the one rule (protocol/verdict_rules.py `outcome`)
the queue, the console and `ocx verdicts` read them by."""
from __future__ import annotations

from ..fossil.checkin_tree import source_repository
from ..fossil.errors import RepositoryError
from ..fossil.repository import Repository
from ..protocol.verdict import Judgement, VerdictTag
from ..protocol.verdict_rules import outcome
from .verdicts import NotACheckin, resolve_checkin, verdicts

GATE_TAGS = (VerdictTag.ci.value,)


class NotPassed(RepositoryError):
    """A check-in D45 does not let be staged: the message names it and why."""


def passing_checkin(repository: Repository, prefix: str) -> str:
    """The full hash of the check-in PREFIX names, when its counted `ci` verdicts pass (D25, D45)."""
    checkin = resolve_checkin(repository, prefix)
    read = verdicts(repository, checkin)
    judged = outcome(read, GATE_TAGS)
    if judged is Judgement.passed:
        return checkin
    if judged is Judgement.failed:
        failing = [v for v in read if v.counts and v.tag in GATE_TAGS and v.verdict
                   and v.verdict.judgement is Judgement.failed]
        who = ", ".join(f"{v.sender}: {v.value}" for v in failing)
        raise NotPassed(f"checkin: {checkin} has a failing counted ci verdict ({who}), D25")
    shown = [v for v in read if v.tag in GATE_TAGS]
    why = f"; {len(shown)} not counted ({shown[0].why})" if shown else ""
    raise NotPassed(f"checkin: {checkin} has no counted ci verdict{why}, D25")


def passing_checkin_of_source(path: str, prefix: str) -> str:
    """The same gate in the repository of OCX's source a node's configuration names (D45): the check-in
    resolved there and its counted `ci` verdicts read there; one it does not hold is refused, naming it."""
    with source_repository(path) as repository:
        try:
            checkin = resolve_checkin(repository, prefix)
        except NotACheckin as error:
            raise NotPassed(f"checkin: {prefix} is not a check-in of release_source {path} "
                            f"({str(error).removeprefix('CHECKIN ')})") from None
        return passing_checkin(repository, checkin)
