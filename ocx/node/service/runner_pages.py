"""Runner pages: the wiki page sandbox/NAME says how runner NAME runs (D14).

OCX's code names no agent: the page's JSON gives the program, the home
directories its runs share, its environment and its remote-control
arguments. Only the newest version sent by an admin or setup user counts.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from ...protocol.admission import RunnerOffer
from ...protocol.errors import FieldError
from ...protocol.fields import AbsolutePath, Text
from ...protocol.finder import fenced_json_blocks, parse_json
from ...protocol.messages import field_error

PAGE_PREFIX = "sandbox/"


class RunnerPage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    command: list[Text]
    homes: list[AbsolutePath] = []
    env: dict[str, str] = {}
    remote: list[str] | None = None  # None: the page offers no remote control

    def offer(self, name: str) -> RunnerOffer:
        return RunnerOffer(name, remote=self.remote is not None)

    def argv(self, remote: bool) -> list[str]:
        return [*self.command, *(self.remote or [] if remote else [])]


def parse_page(text: str) -> RunnerPage:
    """The page's one fenced JSON block as a RunnerPage; FieldError if it is not one."""
    for block in fenced_json_blocks(text):
        try:
            return RunnerPage.model_validate(parse_json(block))
        except ValidationError as error:
            raise field_error(error) from None
        except ValueError as error:
            raise FieldError("page", f"its JSON block does not parse: {error}") from None
    raise FieldError("page", "holds no fenced ```json block (D14)")
