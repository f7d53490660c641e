"""`create`: write a record (C2) at its place, every default written out (Part 4)."""
from __future__ import annotations

import secrets

from pydantic import BaseModel, ConfigDict, Field

from ..fossil.clone_facts import ticket_id
from ..fossil.errors import UnknownUser, WrongKind
from ..fossil.repository import Repository
from ..node.admit import admission, runner_page
from ..node.wake import poke
from ..protocol.admission import Inadmissible, check_admission
from ..protocol.errors import FieldError
from ..protocol.fields import AbsolutePath, BranchName, Login, RunnerName, ServerCode, Text
from ..protocol.messages import Budget, Record, Restrict, check_record
from ..protocol.render import render_message
from .framework import ADMIN_OR_SETUP, Act, HashRef, Tool, ToolInput

DEFAULT_RUNNER = "claude"


class SandboxInput(BaseModel):
    """C2's sandbox, each field defaulted as Part 4 says."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # network defaults to true: both session runners reach their own service (Part 4)
    network: bool = Field(True, description="Whether the run has the host's network; false: only its own "
                                            "loopback (D34).")
    read_only: list[AbsolutePath] = Field([], description="Absolute host paths the run may read.")
    read_write: list[AbsolutePath] = Field([], description="Absolute host paths the run may read and write.")


class CreateInput(ToolInput):
    # `default_now`: a default known only when it runs, which a form writes out (ocx/page/console).
    node: ServerCode | None = Field(None, description="The node's server-code (C1); none: this repository's own.",
                                    json_schema_extra={"default_now": "this_node"})
    user: Login | None = Field(None, description="The Fossil user the run acts as (C5); none: a new one, RUNNER-6hex.",
                               json_schema_extra={"default_now": "new_run_user"})
    runner: RunnerName = Field(DEFAULT_RUNNER, description="How it runs: a runner page's name (sandbox/NAME, D14), "
                                                           "or command for CI.")
    command: list[Text] | None = Field(None, description="For runner command only: the program and its arguments, "
                                                         "run once per check-in in a fresh checkout of it.")
    objective: Text = Field(description="The task in plain words, and what counts as passing.")
    checkins: list[BranchName] = Field([], description="The branches whose check-ins the run is given.")
    hears: list[Login] | None = Field(None, description="The users whose posts in its place (or changes to its "
                                                        "ticket) it is given; none: every admin or setup user now.",
                                      json_schema_extra={"default_now": "admins_now"})
    remote: bool | None = Field(None, description="Whether people may reach the session through its runner's own "
                                                  "remote control; none: true where the runner's page offers one.")
    restrict: Restrict = Field(Restrict(), description="What the node must hold the run to (C6).")
    sandbox: SandboxInput = Field(SandboxInput(), description="What the run sees of the host (C2, D16).")
    budget: Budget = Field(description="Limits on all the run's processes together; wall is required (C2, D10).")
    to: HashRef | None = Field(None, description="A post to reply to, by its hash (10 or more hex digits); the "
                                                 "record's place is its thread.")
    ticket: str | None = Field(None, description="A ticket, by its id (10 or more hex digits), to append the record "
                                                 "to; with neither to nor ticket, a new thread.")


def new_user(runner: str) -> str:
    """C5: the runner's name, a hyphen and six random hex digits."""
    return f"{runner}-{secrets.token_hex(3)}"


def thread_title(record: Record) -> str:
    # Part 4 names no title for a new thread; this one says what it holds.
    return f"OCX record: {record.runner} as {record.user}"


class Create(Tool):
    name = "create"
    summary = "Write a record asking a node to run a program as one user, within limits (C2)."
    Input = CreateInput
    Result = str | None
    capability = ADMIN_OR_SETUP

    def act(self, act: Act, given: CreateInput) -> str | None:
        caller = act.caller
        if given.to is not None and given.ticket is not None:
            raise FieldError("ticket", "give `to` or `ticket`, not both: a record has one place (D12)")
        with caller.reading() as repository:
            record = self._record(act, repository, given)
            place = self._place(act, repository, given)
            self._admit(act, repository, record)
        text = render_message(record, f"A record for {record.runner} as {record.user}.")
        act.check("the record, written out in full: " + text.strip().splitlines()[-2])
        web = caller.web
        if place is None:
            written = act.write("a new thread holding the record", lambda: web().new_thread(thread_title(record), text))
        elif given.to is not None:
            written = act.write(f"a reply to {place} holding the record", lambda: web().reply(place, text))
        else:
            written = act.write(f"a change to ticket {place} holding the record",
                                lambda: web().ticket_change(place, text))
        if written is not None and caller.node is not None:
            # Part 4: on the node itself, the node acts on the record at once.
            act.step("wrote", f"poked node {caller.node.name}: {poke(caller.node.name, 'create') or 'ok'}")
        return written

    def _record(self, act: Act, repository: Repository, given: CreateInput) -> Record:
        caller = act.caller
        runner = given.runner
        user = given.user or new_user(runner)
        is_command = runner == "command"
        if given.hears is not None:
            hears = list(given.hears)
        elif is_command:
            hears = []  # C2: always [] for a command
        else:
            node_user = caller.node.node_user if caller.node else None
            hears = [u.login for u in repository.users() if u.login != node_user and repository.holds_admin(u.login)]
        if given.remote is not None:
            remote = given.remote
        else:
            try:
                page = None if is_command else runner_page(repository, runner)
            except Inadmissible:  # a broken page offers no remote control; _admit says why
                page = None
            remote = page is not None and page.offer(runner).remote
        node = given.node or caller.server_code()
        if not node:
            raise FieldError("node", f"{caller.where} has no server-code; name the node")
        data = {"ocx": 1, "kind": "record", "node": node, "user": user, "runner": runner,
                "objective": given.objective, "checkins": list(given.checkins), "hears": hears, "remote": remote,
                "restrict": given.restrict.model_dump(exclude_none=True), "sandbox": given.sandbox.model_dump(),
                "budget": given.budget.model_dump(exclude_none=True)}
        if given.command is not None:
            data["command"] = list(given.command)
        record = Record.model_validate(data)
        check_record(record)
        act.check(f"node {node}, user {user}, hears {hears}, remote {str(remote).lower()}")
        return record

    def _place(self, act: Act, repository: Repository, given: CreateInput) -> str | None:
        if given.to is not None:
            try:
                repository.post(given.to)
            except WrongKind:
                raise FieldError("to", f"{given.to} is not a forum post") from None
            act.check(f"the record goes in reply to post {given.to}", "to")
            return given.to
        if given.ticket is not None:
            try:
                full = ticket_id(repository, given.ticket) if len(given.ticket) >= 10 else None
            except ValueError as error:
                raise FieldError("ticket", f"{error} (D11)") from None
            if full is None:
                raise FieldError("ticket", f"{given.ticket!r} names no ticket (10 or more hex digits of its id, D11)")
            act.check(f"the record goes in ticket {full}", "ticket")
            return full
        act.check("the record starts a new thread")
        return None

    def _admit(self, act: Act, repository: Repository, record: Record) -> None:
        caller = act.caller
        if caller.node is not None and record.node == caller.server_code():
            # Part 4, C6: on the node, the node's own refusal checks.
            admission(repository, caller.node, "", record, caller.open_runs())  # Inadmissible names the field
            act.check("the node's own checks (C6, D35) pass: it would run this record")
            return
        page = None if record.is_command else runner_page(repository, record.runner)
        offers = {record.runner: page.offer(record.runner)} if page is not None else {}
        try:
            letters = repository.user(record.user).capabilities
        except UnknownUser:  # not made yet: the node makes it (D19)
            letters = None
        check_admission(record, offers=offers, node_user="", run_user_letters=letters)
        act.check("the record passes the checks this repository can make (not on its node)")
