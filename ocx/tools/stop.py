"""`stop`: end a record's run (C3), or answer a lost one by hand (D31)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import Field

from ..fossil.repository import Repository
from ..node.config import NodeConfig
from ..protocol.errors import FieldError
from ..protocol.messages import Outcome, Record, Response
from ..protocol.messages import Stop as StopMessage
from ..protocol.render import render_message
from .caller import Caller
from .framework import ADMIN_OR_SETUP, Act, HashRef, Tool, ToolInput
from .places import FORUM, answer_of, the_record

NODE_USER = NodeConfig.model_fields["node_user"].default  # off the node's host: the usual one (D20)


def _node_user(repository: Repository, caller: Caller, node: str) -> str:
    """The node user whose response answers a record for NODE (C4): this node's own,
    or a node elsewhere's from the server's list of nodes (D36)."""
    if caller.node is not None and not caller.node.elsewhere and node != repository.server_code:
        from ..node.serving.registry import elsewhere

        found = next((entry for entry in elsewhere(repository) if entry.server_code == node), None)
        if found is not None:
            return str(found.node_user)
    return caller.node.node_user if caller.node else NODE_USER


class StopInput(ToolInput):
    record: HashRef = Field(description="The record to stop, by its hash (10 or more hex digits).")
    lost: bool = Field(False, description="Answer the record lost instead, by hand, once its receipt plus its wall "
                                          "has passed (D31).")


class StopTool(Tool):
    name = "stop"
    summary = "Stop a record's run; with lost, answer a record whose node never came back (D31)."
    Input = StopInput
    Result = str | None
    capability = ADMIN_OR_SETUP

    def act(self, act: Act, given: StopInput) -> str | None:
        caller = act.caller
        with caller.reading() as repository:
            where = the_record(repository, given.record, "record")
            record = where.message
            assert isinstance(record, Record)  # the_record stops anything else
            act.check(f"{given.record} is a record for node {record.node}, at {where.kind} {where.place}", "record")
            node_user = _node_user(repository, caller, record.node)
            answered = answer_of(repository, where, node_user)
        if answered is not None:
            assert isinstance(answered.message, Response)  # answer_of finds only responses
            raise FieldError("record",
                             f"already answered {answered.message.outcome.value} by {answered.hash}: nothing to stop")
        if given.lost:
            received = where.sender.time
            due = received + timedelta(seconds=record.budget.wall_seconds) if received else None
            now = datetime.now(UTC)
            if due is None or now < due:
                raise FieldError("lost", f"the record's receipt plus its wall ({record.budget.wall}) ends at {due}; "
                                   "until then only its node answers it (D31)")
            act.check(f"its receipt plus its wall ended at {due.isoformat()}", "lost")
            note = f"answered lost by {caller.login}: its node did not answer by {due.isoformat()} (D31)"
            message: Response | StopMessage = Response(ocx=1, kind="response", node=record.node, answers=where.hash,
                                                       outcome=Outcome.lost, note=note)
            text = render_message(message, "This record's node never answered it.")
        else:
            message = StopMessage(ocx=1, kind="stop", node=record.node, stops=where.hash)
            text = render_message(message, f"Stop record {where.hash[:12]}.")
        what = "a lost response" if given.lost else "a stop"
        if where.kind == FORUM:
            return act.write(f"{what} in reply to {where.hash}", lambda: caller.web().reply(where.hash, text))
        return act.write(f"{what} as a change to ticket {where.place}",
                         lambda: caller.web().ticket_change(where.place, text))
