"""The tool framework without Fossil (D23, D11, Part 4): input checks, the
answer shape, capabilities, hash resolution and dry runs, against a caller
that keeps its artifacts in a dict. It is not a stand-in for Fossil: these
tests exercise only the framework's own logic, which needs no repository."""
from __future__ import annotations

import pytest

from ocx.fossil.errors import AmbiguousPrefix, UnknownArtifact
from ocx.tools.framework import (ADMIN_OR_SETUP, ANYONE, Act, Answer, HashRef, Tool, ToolInput, hash_fields,
                                 run_tool, validate_input)
from ocx.tools.registry import TOOLS

FULL = "a" * 40
OTHER = "abcdef0123" + "9" * 30


class Directory:
    """A caller whose repository is a set of hashes and whose letters are given."""

    def __init__(self, letters: str = "s", hashes: tuple[str, ...] = (FULL, OTHER, OTHER[:-1] + "8")):
        self.login, self.where, self.letters, self.hashes = "pat", "here", letters, hashes

    def capabilities(self) -> frozenset[str]:
        return frozenset(self.letters)

    def resolve(self, prefix: str) -> str:
        found = [h for h in self.hashes if h.startswith(prefix)]
        if not found:
            raise UnknownArtifact(prefix)
        if len(found) > 1:
            raise AmbiguousPrefix(prefix, found)
        return found[0]


class EchoInput(ToolInput):
    target: HashRef
    words: str = "hi"


class Echo(Tool):
    """Writes one thing: the hash it was given."""

    name, summary, Input, Result, capability = "echo", "echo", EchoInput, str, ADMIN_OR_SETUP
    writes: list[str] = []

    def act(self, act: Act, given: EchoInput) -> str | None:
        return act.write(f"echo {given.target}", lambda: (self.writes.append(given.target), given.target)[1])


def answer(raw, letters="s") -> Answer:
    return run_tool(Echo(), raw, Directory(letters))


def test_answer_has_exactly_the_five_keys():
    assert set(answer({"target": FULL}).model_dump()) == {"tool", "dry_run", "log", "result", "stopped"}


def test_unknown_field_is_refused_by_name_before_anything_else():
    got = answer({"target": "zz", "colour": "red"}, letters="")
    assert got.stopped.field == "colour" and "not a field of echo" in got.stopped.why
    assert [s.kind for s in got.log] == ["stopped"]


@pytest.mark.parametrize("raw, field", [
    ({}, "target"), ({"target": 5}, "target"), ({"target": "abc"}, "target"),
    ({"target": "A" * 10}, "target"), ({"target": FULL, "words": 3}, "words"),
    ({"target": FULL, "dry_run": "yes"}, "dry_run"),
])
def test_bad_input_names_the_field(raw, field):
    got = answer(raw)
    assert got.stopped.field == field and got.result is None


def test_input_not_an_object():
    assert answer(["x"]).stopped.field == "input"


def test_prefix_is_resolved_and_logged():
    got = answer({"target": FULL[:10]})
    assert got.stopped is None and got.result == FULL
    assert any(s.kind == "resolved" and s.field == "target" for s in got.log)


def test_unknown_prefix_names_field():
    got = answer({"target": "b" * 12})
    assert got.stopped.field == "target" and "names no artifact" in got.stopped.why


def test_ambiguous_prefix_names_field():
    got = answer({"target": OTHER[:12]})
    assert got.stopped.field == "target" and "give more digits" in got.stopped.why


def test_capability_refused_names_caller():
    got = answer({"target": FULL}, letters="i4")
    assert got.stopped.field == "caller" and "admin or setup" in got.stopped.why


def test_dry_run_checks_everything_and_writes_nothing():
    Echo.writes.clear()
    got = answer({"target": FULL[:10], "dry_run": True})
    assert got.dry_run and got.stopped is None and got.result is None and Echo.writes == []
    assert got.log[-1].kind == "would_write"
    assert answer({"target": FULL, "dry_run": True}, letters="").stopped.field == "caller"


def test_a_real_run_writes_once_and_logs_it():
    Echo.writes.clear()
    got = answer({"target": FULL})
    assert Echo.writes == [FULL] and got.log[-1].kind == "wrote"


def test_stopped_step_is_last():
    got = answer({"target": "c" * 10})
    assert got.log[-1].kind == "stopped" and got.log[-1].field == "target"


def test_capability_letters():
    assert ADMIN_OR_SETUP.held_by(frozenset("a")) and not ADMIN_OR_SETUP.held_by(frozenset("i"))
    assert ANYONE.held_by(frozenset())


def test_every_tool_declares_what_d23_asks():
    # Part 4's six, and the release tool (D46)
    assert set(TOOLS) == {"create", "stop", "post", "audit", "push", "status", "release"}
    for tool in TOOLS.values():
        assert "dry_run" in tool.Input.model_fields and tool.summary and tool.capability.means
        assert tool.Input.model_json_schema()["additionalProperties"] is False


def test_hash_fields_are_found_from_the_type():
    assert hash_fields(TOOLS["post"].Input) == ["to"]
    assert hash_fields(TOOLS["audit"].Input) == ["checkin"]
    assert hash_fields(TOOLS["stop"].Input) == ["record"]
    assert hash_fields(TOOLS["create"].Input) == ["to"]
    assert hash_fields(TOOLS["release"].Input) == []  # resolved where the node reads check-ins from (D45)


@pytest.mark.parametrize("raw, field", [
    ({"objective": "x"}, "budget"),
    ({"objective": "x", "budget": {"wall": "0h"}}, "budget.wall"),
    ({"objective": "x", "budget": {"wall": "1h", "gpu": 1}}, "budget.gpu"),
    ({"objective": "x", "budget": {"wall": "1h"}, "sandbox": {"read_only": ["rel"]}}, "sandbox.read_only[0]"),
    ({"objective": "x", "budget": {"wall": "1h"}, "restrict": {"magic": True}}, "restrict.magic"),
    ({"objective": " ", "budget": {"wall": "1h"}}, "objective"),
    ({"objective": "x", "budget": {"wall": "1h"}, "user": "bad user"}, "user"),
    ({"objective": "x", "budget": {"wall": "1h"}, "place": "x"}, "place"),
])
def test_create_input_refusals(raw, field):
    with pytest.raises(Exception) as caught:
        validate_input(TOOLS["create"], raw)
    assert caught.value.field == field


@pytest.mark.parametrize("raw, field", [
    ({"checkin": FULL, "verdict": "ok", "reason": "r", "against": "PLAN.md"}, "verdict"),
    ({"checkin": FULL, "verdict": "pass", "reason": "r", "against": "PLAN.md", "tag": "x"}, "tag"),
    ({"checkin": FULL, "verdict": "pass", "against": "PLAN.md"}, "reason"),
])
def test_audit_input_refusals(raw, field):
    with pytest.raises(Exception) as caught:
        validate_input(TOOLS["audit"], raw)
    assert caught.value.field == field
