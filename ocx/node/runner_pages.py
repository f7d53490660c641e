"""Runner pages: the wiki page sandbox/NAME says how runner NAME runs (D14).

OCX's code names no agent: the page's JSON gives the program, the home
directories its runs share, its environment and its remote-control
arguments. Only the newest version sent by an admin or setup user counts.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..protocol.admission import RunnerOffer
from ..protocol.errors import FieldError
from ..protocol.fields import AbsolutePath, RelativePath, Text
from ..protocol.finder import fenced_json_blocks, parse_json
from ..protocol.messages import field_error

PAGE_PREFIX = "sandbox/"


class RunnerPage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    command: list[Text]
    homes: list[AbsolutePath] = []
    # D42: for each home, the files (relative to it) a run's copy writes back
    # when it ends, such as an agent's sign-in; nothing else comes back.
    keep: dict[AbsolutePath, list[RelativePath]] = {}
    env: dict[str, str] = {}
    remote: list[str] | None = None  # None: the page offers no remote control

    @model_validator(mode="after")
    def _kept_homes(self) -> RunnerPage:
        for home in self.keep:
            if home not in self.homes:
                raise ValueError(f"keep: {home} is not one of the page's homes")
        return self

    def kept(self) -> tuple[tuple[int, str], ...]:
        """(index of the home in `homes`, file below it) for every kept file (D42)."""
        return tuple((index, name) for index, home in enumerate(self.homes) for name in self.keep.get(home, []))

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
