"""docs/reference/tools.md is what `python -m ocx.tools.reference` writes from
the tools' types (Part 4, D23): regenerate it after changing a tool."""
import subprocess
import sys
from pathlib import Path

from ocx.tools.reference import DEFAULT_PATH, render, type_text
from ocx.tools.registry import TOOLS

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "reference" / "tools.md"


def test_the_committed_reference_is_what_the_generator_writes():
    assert DEFAULT_PATH == COMMITTED
    assert COMMITTED.read_text() == render(), "run `python -m ocx.tools.reference` and commit docs/reference/tools.md"


def test_the_generator_writes_a_given_path(tmp_path):
    target = tmp_path / "ref" / "tools.md"
    done = subprocess.run([sys.executable, "-m", "ocx.tools.reference", str(target)], capture_output=True, text=True)
    assert done.returncode == 0 and target.read_text() == render()


def test_every_tool_and_every_input_field_is_in_it_with_its_description():
    text = render()
    for tool in TOOLS.values():
        assert f"## `{tool.name}`\n\n{tool.summary}\n\nWho may call it: {tool.capability.means}" in text
        for name, info in tool.Input.model_fields.items():
            assert info.description, f"{tool.name}.{name} has no description in its type"
            assert f"| `{name}` |" in text and info.description in text


def test_types_in_words():
    assert type_text({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}) == "list of string or null"
    assert type_text({"enum": ["pass", "fail"], "type": "string"}) == '"pass" or "fail"'
    assert type_text({"$ref": "#/$defs/Budget"}) == "Budget"
    assert type_text({"type": "integer"}) == "whole number" and type_text({}) == "any value"
