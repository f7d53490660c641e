"""Verdict values (V1): `pass: REASON (against X)` on a tag `audited` or `ci`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from .errors import FieldError
from .hashes import is_full_hash
from .render import has_control
from .terminal import is_unsafe


class VerdictTag(str, Enum):
    audited = "audited"  # a judgement, by a person or an agent
    ci = "ci"  # a program's check


class Judgement(str, Enum):
    passed = "pass"
    failed = "fail"


# fullmatch (hashes.py); ASCII: \S is then any but ASCII's spaces; _plain_object refuses the others.
_VALUE = re.compile(r"(pass|fail): (.+) \(against (\S+)\)", re.DOTALL | re.ASCII)


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
    if has_control(reason):
        raise FieldError(field, "must be one line, without control characters (V1)")
    return reason.strip()


def _plain_object(against: str) -> bool:
    """No space of any script in X, nor a character a terminal hides (a zero width, a
    bidirectional mark): "PLAN\u200b.md" is not the PLAN.md it shows as."""
    return not any(c.isspace() or is_unsafe(c) for c in against)


def looks_like_a_hash(text: str) -> bool:
    """Ten or more hex digits and nothing else: a hash or a prefix of one (D11),
    never read as a file's path."""
    return len(text) >= 10 and all(c in "0123456789abcdef" for c in text)


def check_against(against: str, field: str = "against") -> str:
    """V1's X: a record's full hash, or a plausible path of a file in the
    check-in, as Fossil names one (relative, `/`-separated, no empty, `.` or
    `..` part, no space, control character or backslash). An artifact's
    prefix is neither: V2 would read it as a path that names nothing."""
    if not isinstance(against, str) or not against:
        raise FieldError(field, "is empty")
    if is_full_hash(against):
        return against
    if looks_like_a_hash(against):
        raise FieldError(field, f"{against!r} is a hash's prefix: give the record's full hash (V1)")
    parts = against.split("/")
    if not _plain_object(against) or "\\" in against or any(p in ("", ".", "..") for p in parts):
        raise FieldError(field, f"{against!r} is not a record's full hash nor the plausible path of a file in the "
                                "check-in (relative, no empty, . or .. part, no space or backslash)")
    return against


def format_verdict(judgement: Judgement | str, reason: str, against: str) -> str:
    judgement = Judgement(judgement)
    return f"{judgement.value}: {check_reason(reason)} (against {check_against(against)})"


def parse_verdict(value: str) -> Verdict | None:
    """A tag value as a verdict, or None when it is not one (V1)."""
    if not isinstance(value, str):
        return None
    match = _VALUE.fullmatch(value)
    if match is None or has_control(value) or not _plain_object(match.group(3)):
        return None
    return Verdict(Judgement(match.group(1)), match.group(2), match.group(3))


def last_line(output: str) -> str:
    """A command run's reason: the program's last line of output (V1)."""
    for line in reversed(output.splitlines()):
        if line.strip():
            return line.strip()
    return "no output"
