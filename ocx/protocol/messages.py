"""The three OCX messages as types: record (C2), stop and response (C4).

Parsing turns a JSON object into one of them or raises the one FieldError
naming the first field at fault (D8). C7: unknown keys at the top level are
ignored; inside `restrict`, `sandbox` and `budget` an unknown key may be a
limit, so it is an error.
"""
from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from . import budget as grammar
from .errors import FieldError
from .fields import AbsolutePath, BranchName, FullHash, Login, RunnerName, ServerCode, Text
from .finder import FlawedMessage, find_message, is_version_one

VERSION = 1  # C7
COMMAND_RUNNER = "command"  # C2: the runner that runs a program once per check-in


class _Strict(BaseModel):
    # strict: JSON's "1" is not 1 and true is not 1; forbid: C7 for the inner objects.
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")


class Restrict(_Strict):
    """C6: what the node must hold the run to beyond sandbox and budget."""

    # None, not False, when absent: `{}` is written back as `{}` (C2).
    no_password: bool | None = Field(None, description="The run holds no password for its user; its tools run "
                                                       "on the node, writing as its user.")
    branch: BranchName | None = Field(None, description="Its check-ins go only on this branch (push refuses "
                                                        "others); needs no_password.")
    own_thread: bool | None = Field(None, description="It posts only in its record's place; needs no_password.")


class Sandbox(_Strict):
    """C2/D16: what the run sees of the host besides its workspace."""

    network: bool
    read_only: list[AbsolutePath]
    read_write: list[AbsolutePath]


class Budget(_Strict):
    """C2/D10: kept as written, with the numbers systemd enforces (D17)."""

    # `units`: the suffixes the grammar takes, so a form can offer them (ocx/page/console).
    wall: str = Field(description="The longest it may run: a whole number followed by s, m, h or d.",
                      json_schema_extra={"units": [list(u) for u in grammar.WALL_UNITS.items()]})
    cpu: int | None = Field(None, description="Seconds of CPU time, all its processes together.")
    memory: int | str | None = Field(None, description="The most memory at once: bytes, or a whole number "
                                                       "followed by K, M or G (powers of 1024).",
                                     json_schema_extra={"units": [list(u) for u in grammar.MEMORY_UNITS.items()]})
    processes: int | None = Field(None, description="The most processes at once.")

    @field_validator("wall", mode="before")
    @classmethod
    def _wall(cls, value: object) -> object:
        grammar.parse_wall(value)
        return value

    @field_validator("cpu", mode="before")
    @classmethod
    def _cpu(cls, value: object) -> object:
        return None if value is None else grammar.parse_cpu(value)

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: object) -> object:
        if value is not None:
            grammar.parse_memory(value)
        return value

    @field_validator("processes", mode="before")
    @classmethod
    def _processes(cls, value: object) -> object:
        return None if value is None else grammar.parse_processes(value)

    @property
    def wall_seconds(self) -> int:
        return grammar.parse_wall(self.wall)

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory is None else grammar.parse_memory(self.memory)


class _Message(BaseModel):
    # C7: a reader ignores top-level keys it does not know.
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    ocx: Literal[1]

    @field_validator("ocx", mode="before")
    @classmethod
    def _version(cls, value: object) -> object:
        # One reader of the version (finder.is_version_one): strict Literal[1] still takes true and 1.0.
        if not is_version_one(value):
            raise ValueError(f"{_shown(value)} is not 1, the version this reader knows (C7)")
        return value


class Record(_Message):
    """C2: a request that a node run a program as one user, within limits."""

    kind: Literal["record"]
    node: ServerCode
    user: Login
    runner: RunnerName
    command: list[Text] | None = None
    objective: Text
    checkins: list[BranchName]
    hears: list[Login]
    remote: bool
    restrict: Restrict
    sandbox: Sandbox
    budget: Budget

    @property
    def is_command(self) -> bool:
        return self.runner == COMMAND_RUNNER


class Stop(_Message):
    """C3: end the run of the record named in `stops`."""

    kind: Literal["stop"]
    node: ServerCode
    stops: FullHash


class Outcome(str, Enum):
    """C4, in the order of "the first that applies"."""

    refused = "refused"
    stopped = "stopped"
    budget = "budget"
    unenforced = "unenforced"
    lost = "lost"
    exited = "exited"


class Response(_Message):
    """C4: the node's one answer to a record."""

    kind: Literal["response"]
    node: ServerCode
    answers: FullHash
    outcome: Outcome
    note: str

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, value: object) -> object:
        # strict mode takes only Enum members; the wire carries the string.
        if isinstance(value, str) and value in Outcome._value2member_map_:
            return Outcome(value)
        raise ValueError(f"{value!r} is not one of {', '.join(o.value for o in Outcome)}")


Message = Record | Stop | Response
_KINDS: dict[str, type[Record] | type[Stop] | type[Response]] = {"record": Record, "stop": Stop, "response": Response}
KINDS = tuple(_KINDS)


def parse_message(obj: object) -> Message:
    """Validate a message object; FieldError names the first field at fault."""
    if not isinstance(obj, dict):
        raise FieldError("", "a message is a JSON object")
    kind = obj.get("kind")
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise FieldError("kind", f"{_shown(obj.get('kind'))} is not one of {', '.join(KINDS)}")
    if isinstance(obj, FlawedMessage):
        raise obj.flaw  # a repeated key, NaN, a number out of bounds: the message, malformed (D7, D8)
    try:
        message = model.model_validate(obj)
    except ValidationError as error:
        raise field_error(error) from None
    if isinstance(message, Record):
        check_record(message)
    return message


def message_in(text: str) -> Message | None:
    """The valid message in a post's or ticket change's text (D7), or None:
    no message, or one that does not parse. For readers of what others wrote,
    who skip what is not a message; a node refusing a record names the field."""
    found = find_message(text)
    if found is None:
        return None
    try:
        return parse_message(found)
    except FieldError:
        return None


def check_record(record: Record) -> None:
    """Rules that tie fields together (C2, C6, D35), as FieldErrors."""
    if record.is_command:
        if not record.command:
            raise FieldError("command", "is required for runner command (D35)")
        if not record.checkins:
            raise FieldError("checkins", "is empty: a command record would wait for ever (D35)")
        if record.hears:
            raise FieldError("hears", "must be [] for runner command (C2)")
    elif record.command is not None:
        raise FieldError("command", f"is only for runner command, not {record.runner}")
    restrict = record.restrict
    for name in ("branch", "own_thread"):
        if getattr(restrict, name) not in (None, False) and restrict.no_password is not True:
            raise FieldError(f"restrict.{name}", "needs restrict.no_password: a run that holds its password can "
                                                 "write past any tool (C6)")


def field_error(error: ValidationError) -> FieldError:
    """The first pydantic error, as the field path and a plain reason."""
    first = error.errors(include_url=False)[0]
    path = _path(first["loc"])
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        return FieldError(path, cause.why)
    return FieldError(path, _reason(first))


def _path(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


_REASONS = {
    "missing": "is required",
    "extra_forbidden": "is not a key OCX knows here, and an unknown key here may be a limit (C7)",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "int_type": "must be a whole number",
    "list_type": "must be a list",
    "model_type": "must be an object",
    "dict_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def _reason(detail: ErrorDetails) -> str:
    kind = detail["type"]
    if kind in _REASONS:
        return _REASONS[kind]
    if kind == "literal_error":
        return f"{_shown(detail.get('input'))} must be {detail['ctx']['expected']}"
    if kind == "value_error":
        return str(detail["msg"]).removeprefix("Value error, ")
    return f"{_shown(detail.get('input'))}: {detail['msg']}"


def _shown(value: object) -> str:
    import json

    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]
