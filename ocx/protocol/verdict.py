"""Verdict values (V1): `pass: REASON (against X)` on a tag `audited` or `ci`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .errors import FieldError
from .hashes import is_full_hash
from .render import is_control


class VerdictTag(str, Enum):
    audited = "audited"  # a judgement, by a person or an agent
    ci = "ci"  # a program's check


class Judgement(str, Enum):
    passed = "pass"
    failed = "fail"


_VALUE = re.compile(r"(pass|fail): (.+) \(against (\S+)\)", re.DOTALL)  # fullmatch (hashes.py)


@dataclass(frozen=True)
class Verdict:
    judgement: Judgement
    reason: str
    against: str  # a record's full hash, or the path of a file stating the objective

    @property
    def against_record(self) -> bool:
        return is_full_hash(self.against)

    def value(self) -> str:
        return format_verdict(self.judgement, self.reason, self.against)


def check_reason(reason: str, field: str = "reason") -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise FieldError(field, "is empty")
    if any(is_control(c) for c in reason):
        raise FieldError(field, "must be one line, without control characters (V1)")
    return reason.strip()


def check_against(against: str, field: str = "against") -> str:
    if (not isinstance(against, str) or not against
            or any(c.isspace() or is_control(c) for c in against)):
        raise FieldError(field, f"{against!r} is not a record's full hash or a file path without spaces")
    if against.startswith("/") or ".." in against.split("/"):
        raise FieldError(field, f"{against!r} must be a path inside the check-in, or a record's full hash")
    return against


def format_verdict(judgement: Judgement | str, reason: str, against: str) -> str:
    judgement = Judgement(judgement)
    return f"{judgement.value}: {check_reason(reason)} (against {check_against(against)})"


def parse_verdict(value: str) -> Verdict | None:
    """A tag value as a verdict, or None when it is not one (V1)."""
    if not isinstance(value, str):
        return None
    match = _VALUE.fullmatch(value)
    if match is None or any(is_control(c) for c in value):
        return None
    return Verdict(Judgement(match.group(1)), match.group(2), match.group(3))


def last_line(output: str) -> str:
    """A command run's reason: the program's last line of output (V1)."""
    for line in reversed(output.splitlines()):
        if line.strip():
            return line.strip()
    return "no output"
