"""One definition per tool (D23): typed input and result, a capability, one method.

A tool's run goes the same way from every way in (CLI, MCP, the web page,
a run's tool socket), in this order, and stops at the first fault naming its
field (Part 4, D11):
1. the input is validated against the tool's pydantic model: a field it does
   not know is refused, by name;
2. the caller's capability is checked in the repository;
3. every hash field (10 or more hex digits) is resolved to its full hash;
4. the tool's own method checks and writes, each write through `Act.write`,
   which in a dry run only logs what it would write.
The answer is always `{"tool", "dry_run", "log", "result", "stopped"}`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..fossil.errors import AmbiguousPrefix, BadPrefix, RepositoryError, UnknownArtifact
from ..fossil.fossil_failure import FossilError
from ..fossil.web import WebError
from ..protocol.errors import FieldError
from ..protocol.hashes import is_hash_prefix
from ..protocol.messages import field_error

if TYPE_CHECKING:  # caller.py reaches the node's records; the framework needs only its type
    from .caller import Caller


class HashField:
    """Marks a field whose value is a hash prefix to resolve (D11)."""


def _prefix(value: str) -> str:
    if not is_hash_prefix(value):
        raise ValueError(f"{value!r} is not 10 to 64 lower-case hex digits of a hash (D11)")
    return value


HashRef = Annotated[str, AfterValidator(_prefix), HashField()]


class ToolInput(BaseModel):
    """Every tool's input: no unknown field (Part 4), `dry_run` everywhere."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    dry_run: bool = Field(False, description="Check the input and the caller's rights, say in the log what it would "
                                             "write, and write nothing (Part 4).")


StepKind = Literal["checked", "resolved", "read", "would_write", "wrote", "stopped"]


class Step(BaseModel):
    """One step of the log (D23): typed, so a reader need not parse words."""

    kind: StepKind = Field(description="What the step did: checked, resolved (a hash prefix), read, would_write "
                                       "(a dry run's write), wrote, or stopped.")
    field: str | None = Field(None, description="The input field it concerns, if any.")
    text: str = Field(description="What happened, in words.")


class Stopped(BaseModel):
    field: str = Field(description="The field at fault (or caller, or input).")
    why: str = Field(description="Why the tool stopped there.")


class Answer(BaseModel):
    """The one answer shape of every tool (Part 4, D23)."""

    tool: str = Field(description="The tool's name.")
    dry_run: bool = Field(description="Whether this was a dry run, which writes nothing.")
    log: list[Step] = Field(description="The steps it took, in order; a stopped tool's last step is the one that "
                                        "stopped it.")
    result: Any = Field(None, description="What it wrote (the full hash of the artifact), or what it says "
                                          "(status); null when it wrote nothing.")
    stopped: Stopped | None = Field(None, description="Null when the tool did its work; otherwise why not, naming "
                                                      "the field at fault.")


class Capability(BaseModel):
    """Who may call a tool: any one of LETTERS, as Fossil expands them; none for anyone."""

    model_config = ConfigDict(frozen=True)

    letters: str
    means: str

    def held_by(self, effective: frozenset[str]) -> bool:
        return not self.letters or bool(set(self.letters) & effective)


ADMIN_OR_SETUP = Capability(letters="as", means="admin or setup")
MAY_POST = Capability(letters="34", means="post to the forum")
MAY_CHECK_IN = Capability(letters="i", means="check in")
ANYONE = Capability(letters="", means="anyone")


class Act:
    """What a tool's method is given: the caller, the log, and the one way to write."""

    def __init__(self, caller: Caller, dry_run: bool):
        self.caller = caller
        self.dry_run = dry_run
        self.log: list[Step] = []

    def step(self, kind: StepKind, text: str, field: str | None = None) -> None:
        self.log.append(Step(kind=kind, field=field, text=text))

    def check(self, text: str, field: str | None = None) -> None:
        self.step("checked", text, field)

    def write(self, what: str, do: Callable[[], str]) -> str | None:
        """Write WHAT by calling DO (which returns the written hash), unless dry run."""
        if self.dry_run:
            self.step("would_write", what)
            return None
        written = do()
        self.step("wrote", f"{what}: {written}")
        return written


class Tool:
    """A tool: subclasses set the class attributes and define `act`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Input: ClassVar[type[ToolInput]]
    Result: ClassVar[Any]  # a type: the hash it wrote (str | None), or a model
    capability: ClassVar[Capability]

    def act(self, act: Act, given: Any) -> Any:  # pragma: no cover - every tool overrides it
        raise NotImplementedError


def _marked(annotation: Any) -> bool:
    # `HashRef | None` keeps the mark inside the union's arguments.
    return any(isinstance(arg, HashField) or _marked(arg) for arg in get_args(annotation))


def hash_fields(model: type[BaseModel]) -> list[str]:
    return [name for name, info in model.model_fields.items()
            if any(isinstance(m, HashField) for m in info.metadata) or _marked(info.annotation)]


def validate_input(tool: Tool, raw: object) -> ToolInput:
    """The input as the tool's type, or FieldError naming the first field at fault."""
    if not isinstance(raw, dict):
        raise FieldError("input", "a tool's input is a JSON object")
    unknown = [key for key in raw if key not in tool.Input.model_fields]
    if unknown:
        # Part 4: refused before anything else is looked at, naming it.
        raise FieldError(str(unknown[0]),
                         f"is not a field of {tool.name} (its fields: {', '.join(tool.Input.model_fields)})")
    try:
        return tool.Input.model_validate(raw)
    except ValidationError as error:
        raise field_error(error) from None


def resolve_hashes(caller: Caller, given: ToolInput, act: Act) -> ToolInput:
    """Every hash field as its full hash (D11); an unknown or ambiguous one stops, naming it."""
    resolved = {}
    for name in hash_fields(type(given)):
        value = getattr(given, name)
        if value is None:
            continue
        try:
            full = caller.resolve(value)
        except AmbiguousPrefix as error:
            raise FieldError(name,
                             f"{value} names {len(error.matches)} or more artifacts; give more digits (D11)") from None
        except UnknownArtifact:
            raise FieldError(name, f"{value} names no artifact in {caller.where} (D11)") from None
        except (BadPrefix, RepositoryError) as error:
            raise FieldError(name, str(error)) from None
        if full != value:
            act.step("resolved", f"{value} is {full}", name)
        resolved[name] = full
    return given.model_copy(update=resolved) if resolved else given


def run_tool(tool: Tool, raw: object, caller: Caller) -> Answer:
    """Run TOOL on RAW input as CALLER; always an Answer, never an exception for bad input."""
    dry_run = bool(raw.get("dry_run")) if isinstance(raw, dict) and raw.get("dry_run") is True else False
    act = Act(caller, dry_run)
    result = None
    try:
        given = validate_input(tool, raw)
        act.check("input matches the tool's type")
        _check_capability(tool, caller, act)
        given = resolve_hashes(caller, given, act)
        result = tool.act(act, given)
    except FieldError as fault:  # a tool's method, like its input's type, refuses by naming the field
        return _stopped(tool, act, fault.field, fault.why)
    except (WebError, FossilError, PermissionError) as refused:
        # The server refused the write: the caller's rights (D22), not the input.
        return _stopped(tool, act, "caller", str(refused))
    if isinstance(result, BaseModel):
        result = result.model_dump(mode="json")
    return Answer(tool=tool.name, dry_run=dry_run, log=act.log, result=result, stopped=None)


def input_refused(tool: Tool, raw: object, fault: FieldError) -> Answer:
    """run_tool's answer for input that fails its type, for a way in that
    checks the input before it makes a caller at all (Part 4)."""
    dry_run = isinstance(raw, dict) and raw.get("dry_run") is True
    return Answer(tool=tool.name, dry_run=dry_run, log=[Step(kind="stopped", field=fault.field, text=fault.why)],
                  result=None, stopped=Stopped(field=fault.field, why=fault.why))


def _stopped(tool: Tool, act: Act, field: str, why: str) -> Answer:
    act.step("stopped", why, field)
    return Answer(tool=tool.name, dry_run=act.dry_run, log=act.log, result=None,
                  stopped=Stopped(field=field, why=why))


def _check_capability(tool: Tool, caller: Caller, act: Act) -> None:
    if not tool.capability.letters:
        return
    held = caller.capabilities()
    if not tool.capability.held_by(held):
        raise FieldError("caller", f"{caller.login} may not {tool.name}: it needs {tool.capability.means} "
                             f"(one of {tool.capability.letters!r}), and holds {''.join(sorted(held)) or 'nothing'}")
    act.check(f"{caller.login} holds {tool.capability.means}", "caller")
