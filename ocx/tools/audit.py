"""`audit`: a verdict on a check-in (V1), never on the caller's own (D25)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..fossil.errors import RepositoryError, WrongKind
from ..fossil.repository import Repository
from ..protocol.errors import FieldError
from ..protocol.fields import Text
from ..protocol.verdict import check_against, format_verdict, looks_like_a_hash
from ..reading.verdicts import record_checkins
from .caller import Caller
from .framework import MAY_CHECK_IN, Act, HashRef, Tool, ToolInput


class AuditInput(ToolInput):
    checkin: HashRef = Field(description="The check-in judged, by its hash (10 or more hex digits); never the "
                                         "caller's own (D25).")
    verdict: Literal["pass", "fail"] = Field(description="The judgement.")
    reason: Text = Field(description="Why, on one line.")
    against: Text = Field(description="The objective it was judged against: a record whose checkins has the "
                                      "check-in's branch, by its hash (10 or more hex digits), or the path of a file "
                                      "in the check-in that states it (V1).")
    tag: Literal["audited", "ci"] = Field("audited", description="audited for a judgement, ci for a program's check.")


class AuditTool(Tool):
    name = "audit"
    summary = ("Judge a check-in: a tag audited (or ci) whose value is pass or fail, a reason, and what it was "
               "judged against (V1).")
    Input = AuditInput
    Result = str | None
    capability = MAY_CHECK_IN

    def act(self, act: Act, given: AuditInput) -> str | None:
        caller = act.caller
        with caller.reading() as repository:
            try:
                checkin = repository.checkin(given.checkin)
            except WrongKind:
                raise FieldError("checkin", f"{given.checkin} is not a check-in") from None
            sender = self._sender(caller, repository, checkin.hash)
            for whose, login in (("sent", sender), ("is the user written in", checkin.user)):
                if login == caller.login:
                    raise FieldError("checkin",
                                     f"{caller.login} {whose} check-in {given.checkin}: never one's own (D25)")
            act.check(f"{given.checkin} on {checkin.branch}, sent by {sender}, not the caller's", "checkin")
            against = self._against(act, repository, given.against, checkin.branch)
            value = format_verdict(given.verdict, given.reason, against)  # a FieldError names the field
        act.check(f"tag {given.tag} = {value!r}")
        return act.write(f"tag {given.tag} on {given.checkin}",
                         lambda: caller.tag(checkin.hash, given.tag, value))

    @staticmethod
    def _sender(caller: Caller, repository: Repository, checkin: str) -> str | None:
        """The check-in's sender where it was received (D25, D37): on a node
        elsewhere the server's node says, since its clone names itself the
        sender of all it pulled; a server that cannot say refuses the audit.
        None: a login deleted since, which is not the caller."""
        from ..node.server_link import ServerRefused, Unreachable

        try:
            return caller.sender_of(repository, checkin)
        except (Unreachable, ServerRefused) as error:
            raise FieldError("checkin", f"the server's node cannot say who sent {checkin[:12]} ({error}): "
                                        "never judged unknown (D25, D37)") from None

    def _against(self, act: Act, repository: Repository, against: str, branch: str | None) -> str:
        """What V2 will count (V1, V2): a record whose `checkins` has the
        check-in's branch, by its full hash (a prefix resolved here), or a
        plausible path of a file; never a prefix or a record that lacks it."""
        if not looks_like_a_hash(against):
            return check_against(against)
        try:
            full = repository.resolve(against)
        except RepositoryError as error:
            raise FieldError("against",
                             f"{error}: a record's hash, or a file's path that is not all hex digits (D11)") from None
        if full != against:
            act.step("resolved", f"{against} is {full}", "against")
        checkins = record_checkins(repository)(full)
        if checkins is None:
            raise FieldError("against", f"{full} is not a record (C2): V2 counts a verdict against a record or a file")
        if branch not in checkins:
            raise FieldError("against", f"record {full[:12]} does not list branch {branch!r} in its checkins "
                                  f"({', '.join(checkins) or 'none'}): V2 would not count this verdict")
        act.check(f"record {full[:12]} lists branch {branch} in its checkins", "against")
        return full
