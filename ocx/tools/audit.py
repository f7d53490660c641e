"""`audit`: a verdict on a check-in (V1), never on the caller's own (D25)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..fossil.errors import RepositoryError, WrongKind
from ..protocol.errors import FieldError
from ..protocol.fields import Text
from ..protocol.hashes import is_hash_prefix
from ..protocol.verdict import check_against, format_verdict
from .framework import MAY_CHECK_IN, Act, HashRef, Stop, Tool, ToolInput


class AuditInput(ToolInput):
    checkin: HashRef = Field(description="The check-in judged, by its hash (10 or more hex digits); never the "
                                         "caller's own (D25).")
    verdict: Literal["pass", "fail"] = Field(description="The judgement.")
    reason: Text = Field(description="Why, on one line.")
    against: Text = Field(description="The objective it was judged against: a record's hash (10 or more hex "
                                      "digits), or the path of a file in the check-in that states it (V1).")
    tag: Literal["audited", "ci"] = Field("audited", description="audited for a judgement, ci for a program's check.")


class AuditTool(Tool):
    name = "audit"
    summary = "Judge a check-in: a tag audited (or ci) whose value is pass or fail, a reason, and what it was judged against (V1)."
    Input = AuditInput
    Result = str | None
    capability = MAY_CHECK_IN

    def act(self, act: Act, given: AuditInput) -> str | None:
        caller = act.caller
        with caller.reading() as repository:
            try:
                checkin = repository.checkin(given.checkin)
            except WrongKind:
                raise Stop("checkin", f"{given.checkin} is not a check-in") from None
            claims = [("is the user written in", checkin.user)]
            if caller.reads_clone:
                # A clone records everything it pulled as its own user (F2): only the server knows the sender.
                act.check("the check-in's sender is known only on the node's host; its U card is checked", "checkin")
            else:
                claims.insert(0, ("sent", checkin.sender.login))
            for whose, login in claims:
                if login == caller.login:
                    raise Stop("checkin", f"{caller.login} {whose} check-in {given.checkin}: never one's own (D25)")
            act.check(f"{given.checkin} on {checkin.branch}, sent by {checkin.sender.login}, not the caller's", "checkin")
            against = given.against
            if is_hash_prefix(against):
                try:
                    full = repository.resolve(against)
                except RepositoryError as error:
                    raise Stop("against", f"{error} (D11)") from None
                if full != against:
                    act.step("resolved", f"{against} is {full}", "against")
                against = full
            try:
                check_against(against)
                value = format_verdict(given.verdict, given.reason, against)
            except FieldError as error:
                raise Stop(error.field, error.why) from None
        act.check(f"tag {given.tag} = {value!r}")
        return act.write(f"tag {given.tag} on {given.checkin}",
                         lambda: caller.tag(checkin.hash, given.tag, value))
