"""`release`: a node's releases (D45-D48), shown, or a stage, accept or roll-back asked on the record.

The page runs as the Fossil server's account and cannot move root's links, and a call from a
laptop must answer as one on the node: so `stage`, `accept` and `rollback` check what can be
checked here (the check-in passes by D25; something is staged; there is somewhere to roll back
to) and write, as the caller (D21, D22), a request post in the node's releases thread
(node/releases/thread.py), which the node acts on as root, once, after checking the caller's
admin or setup again from the user table (node_service/release_requests.py), and answers in the
thread (D46). `show` writes nothing: it reads the links and the staged records, which the
page's account may read (node/releases/shown.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from ..fossil.repository import Repository
from ..node.host_paths import RELEASES_DIRECTORY
from ..protocol.errors import FieldError
from ..protocol.hashes import is_hash_prefix
from ..protocol.release_request import ReleaseRequest, render_request, thread_title
from .framework import ADMIN_OR_SETUP, Act, Tool, ToolInput


def _checkin_prefix(value: str) -> str:
    if not is_hash_prefix(value):
        raise ValueError(f"{value!r} is not 10 to 64 lower-case hex digits of a hash (D11)")
    return value


# Not a HashRef: the framework resolves those in the served repository, and a node may stage from the
# repository of OCX's source it names (D45). `_gate` resolves it where the node reads it.
CheckinRef = Annotated[str, AfterValidator(_checkin_prefix)]


class ReleaseInput(ToolInput):
    action: Literal["show", "stage", "accept", "rollback"] = Field(
        description="show: what current, previous and next name; stage: build a check-in and offer it as next; "
                    "accept: next becomes current; rollback: previous becomes current (D45, D46).")
    checkin: CheckinRef | None = Field(None, description="For stage only: the check-in to build, by its hash (10 or "
                                                      "more hex digits); its counted ci verdicts must pass (D25).")


class ReleaseShown(BaseModel):
    node: str = Field(description="The node's name (its units' instance).")
    current: dict[str, Any] | None = Field(description="The release current names: its check-in, digest, smoke.")
    previous: dict[str, Any] | None = Field(description="The release previous names (where a roll-back goes).")
    next: dict[str, Any] | None = Field(description="The release staged as next (what accept takes).")
    thread: str | None = Field(description="The node's releases thread (its root post), where requests and the "
                                           "node's answers are, or null while nobody started it.")


class ReleaseTool(Tool):
    name = "release"
    summary = ("Show a node's releases, or ask it on the record to stage a check-in, accept next or roll back "
               "(D45, D46): the node acts as root and answers in its releases thread.")
    Input = ReleaseInput
    Result = ReleaseShown | str | None
    capability = ADMIN_OR_SETUP

    def __init__(self, root: str = RELEASES_DIRECTORY, config_dir: Path | None = None) -> None:
        self.root = root  # the node's releases' root (a test's own, in tests of the tool alone)
        self.config_dir = config_dir  # where NAME.release-source is (a test's own; else /etc/ocx, D45)

    def act(self, act: Act, given: ReleaseInput) -> ReleaseShown | str | None:
        from ..node.releases.shown import described
        from ..node.releases.thread import releases_thread

        caller = act.caller
        node = caller.node
        if node is None:
            raise FieldError("caller", f"{caller.where} is served by no node here: releases are a node's (D45)")
        if node.elsewhere:
            raise FieldError("caller", f"node {node.name} is a node elsewhere: its releases are moved on its own "
                                       "host (D48)")
        if (given.checkin is None) == (given.action == "stage"):
            raise FieldError("checkin", "is required to stage, and only for stage")
        links = described(self.root)
        with caller.reading() as repository:
            thread = releases_thread(repository, node.name, node.node_user)
            server_code = repository.server_code
            checkin = self._gate(act, repository, given.checkin, node.name) if given.checkin else None
        act.step("read", f"node {node.name}: current {_named(links['current'])}, previous "
                         f"{_named(links['previous'])}, next {_named(links['next'])}")
        if given.action == "show":
            return ReleaseShown(node=node.name, thread=thread, **links)
        self._movable(act, given.action, links)
        request = ReleaseRequest(ocx_release=given.action, node=server_code, checkin=checkin)
        text = render_request(request, f"{caller.login} asks node {node.name} to {given.action}"
                                       f"{' ' + checkin if checkin else ''} (D46).")
        if thread is None:
            written = act.write(f"a new thread {thread_title(node.name)!r} holding the request",
                                lambda: caller.web().new_thread(thread_title(node.name), text))
        else:
            written = act.write(f"a reply to {thread} holding the request", lambda: caller.web().reply(thread, text))
        if written is not None:
            from ..node.wake import poke

            act.step("wrote", f"poked node {node.name}: {poke(node.name, 'release') or 'ok'}")
        return written

    def _gate(self, act: Act, repository: Repository, prefix: str, node: str) -> str:
        """The full hash of the check-in to stage, resolved and gated where the node reads it (D25, D45)."""
        from ..fossil.errors import FOSSIL_FAILURES, RepositoryError
        from ..node.releases.source import named_source
        from ..reading.release_gate import NotPassed, passing_checkin, passing_checkin_of_source

        try:
            source = named_source(node, self.config_dir)  # the repository of OCX's source the node names (D45)
            checkin = passing_checkin_of_source(source, prefix) if source is not None else None
        except NotPassed as error:
            raise FieldError("checkin", str(error).removeprefix("checkin: ")) from None
        except FOSSIL_FAILURES + (ValueError,):  # not the page's to read: root reads and gates it when it acts
            if len(prefix) not in (40, 64):
                raise FieldError("checkin", "give its full hash: the release source the node names is not "
                                            "readable here, so only the node resolves it (D11, D45)") from None
            act.check(f"{prefix} is gated by the node in the release source it names (D25, D45)", "checkin")
            return prefix
        try:
            checkin = checkin or passing_checkin(repository, prefix)
        except RepositoryError as error:
            raise FieldError("checkin", str(error).removeprefix("checkin: ")) from None
        if checkin != prefix:
            act.step("resolved", f"{prefix} is {checkin}", "checkin")
        act.check(f"{checkin} passes by its counted ci verdicts (D25, D45)", "checkin")
        return checkin

    @staticmethod
    def _movable(act: Act, action: str, links: dict[str, dict[str, Any] | None]) -> None:
        current, previous, staged = (_named(links[name]) for name in ("current", "previous", "next"))
        if action == "accept":
            if links["next"] is None:
                raise FieldError("action", "nothing is staged as next: stage a check-in first")
            if staged == current:
                raise FieldError("action", f"next {staged} is current already (D46)")
            act.check(f"next {staged} would become current; previous {current}", "action")
        elif action == "rollback":
            if links["previous"] is None:
                raise FieldError("action", "there is no previous release to roll back to")
            act.check(f"previous {previous} would become current; previous {current}", "action")


def _named(facts: dict[str, Any] | None) -> str:
    return str(facts["release"]) if facts else "none"
