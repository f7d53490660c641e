"""`post`: a reply to a post (Part 4), in its record's place only for a run that restricts `own_thread` (C6)."""
from __future__ import annotations

from pydantic import Field

from ..fossil.errors import WrongKind
from ..protocol.errors import FieldError
from ..protocol.fields import Text
from .framework import MAY_POST, Act, HashRef, Tool, ToolInput


class PostInput(ToolInput):
    to: HashRef = Field(description="The post to reply to, by its hash (10 or more hex digits).")
    text: Text = Field(description="The reply, in Markdown.", json_schema_extra={"contentMediaType": "text/markdown"})


class PostTool(Tool):
    name = "post"
    summary = "Reply to a forum post, in Markdown."
    Input = PostInput
    Result = str | None
    capability = MAY_POST

    def act(self, act: Act, given: PostInput) -> str | None:
        caller = act.caller
        with caller.reading() as repository:
            try:
                post = repository.post(given.to)
            except WrongKind:
                raise FieldError("to", f"{given.to} is not a forum post") from None
            act.check(f"{given.to} is a post in thread {post.root}", "to")
            run = caller.open_run()
            if run is not None and run.record.restrict.own_thread:
                if post.root != run.place:
                    raise FieldError("to", f"{given.to} is outside record {run.hash[:12]}'s place {run.place}, "
                                     "and the record restricts own_thread (C6)")
                act.check(f"within record {run.hash[:12]}'s own thread (own_thread, C6)", "to")
        return act.write(f"a reply to {given.to}", lambda: caller.web().reply(given.to, given.text))
