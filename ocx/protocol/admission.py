"""Whether a well-formed record can run on this node as asked (C3, C6, C7, D14, D35).

Pure: the node gathers the facts (runner pages, the run user's capabilities,
what it enforces) and this says the first reason to refuse, naming a field.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .errors import FieldError
from .messages import Record

ADMIN_LETTERS = frozenset("as")  # admin or setup (C1)
# Fossil's own logins, whose letters every visitor, every login or every u/v
# login holds: a run's letters given to one would be given to all (D40).
SPECIAL_LOGINS = frozenset({"nobody", "anonymous", "reader", "developer"})
# D24: this node enforces every restriction of C6.
ENFORCED_RESTRICTIONS = frozenset({"no_password", "branch", "own_thread"})


def holds_admin(capabilities: frozenset[str] | set[str] | str) -> bool:
    return bool(set(capabilities) & ADMIN_LETTERS)


class Inadmissible(FieldError):
    """A well-formed record this node cannot run as asked: answered `refused`,
    naming the field (C4, C6, D8). Raised by the admission's checks only, so
    a caller that catches it lets every other failure be tried again."""


@dataclass(frozen=True)
class RunnerOffer:
    """A runner this node offers: its page sandbox/NAME, sent by an admin (D14)."""

    name: str
    remote: bool  # the page names arguments for remote control


def check_admission(
    record: Record,
    *,
    offers: Mapping[str, RunnerOffer],
    node_user: str,
    run_user_letters: str | None,
    enforced: frozenset[str] = ENFORCED_RESTRICTIONS,
) -> None:
    """Inadmissible, naming the first reason this node must answer the record `refused`.
    RUN_USER_LETTERS: the login's own capability letters (Fossil's user.cap),
    None when it does not exist yet."""
    offer = offers.get(record.runner)
    if not record.is_command and offer is None:
        raise Inadmissible("runner", f"{record.runner!r} is not offered by this node: no wiki page "
                                     f"sandbox/{record.runner} sent by an admin or setup user (D14)")
    if record.remote and (record.is_command or offer is None or not offer.remote):
        raise Inadmissible("remote", f"runner {record.runner} offers no remote control here (D35)")
    asked = record.restrict.model_dump(exclude_none=True)
    for name, value in asked.items():
        if value is not False and name not in enforced:
            raise Inadmissible(f"restrict.{name}", "this node cannot enforce it (C6)")
    if record.user in SPECIAL_LOGINS:
        raise Inadmissible("user", f"{record.user!r} is one of Fossil's special logins: a run user is new, or "
                                     "holds no capability (D40)")
    if record.user == node_user:
        raise Inadmissible("user", f"{record.user!r} is the node user (D35, D40)")
    if run_user_letters:
        what = "admin or setup" if holds_admin(run_user_letters) else f"capabilities {run_user_letters!r}"
        raise Inadmissible("user", f"{record.user!r} exists and holds {what}: a run user is new, or holds no "
                                     "capability (D40)")
