"""The console's catalog of the tools (ocx/page/console/catalog.py) and its
forms (forms.py): the written file is what the tools' types give, each JSON
field gets an input that fits it, and a form reads back into exactly the
input it was filled with. Pure: no server."""
from __future__ import annotations

import json

from hypothesis import given, strategies as st

from ocx.page.console import catalog
from ocx.page.console.forms import UNIT, tool_input
from ocx.protocol.errors import FieldError
from ocx.protocol import budget as grammar
from ocx.tools.registry import TOOLS


def test_the_written_catalog_is_what_the_tools_types_give():
    assert catalog.PATH.read_text() == catalog.render(), "run: python -m ocx.page.console.catalog"
    assert [tool["name"] for tool in catalog.tools()] == list(TOOLS)


def fields_of(tool: str) -> dict:
    def flat(specs, prefix=""):
        for spec in specs:
            yield prefix + spec["name"], spec
            if spec["widget"] == "object":
                yield from flat(spec["fields"], prefix + spec["name"] + ".")
    return dict(flat(catalog.by_name(tool)["fields"]))


def test_each_field_gets_an_input_that_fits_its_type():
    create = fields_of("create")
    widgets = {name: spec["widget"] for name, spec in create.items()}
    assert widgets["checkins"] == widgets["hears"] == widgets["command"] == widgets["sandbox.read_only"] == "lines"
    assert widgets["budget"] == widgets["sandbox"] == widgets["restrict"] == "object"
    assert widgets["budget.wall"] == widgets["budget.memory"] == "amount"
    assert widgets["budget.cpu"] == widgets["budget.processes"] == "number"
    assert widgets["remote"] == widgets["sandbox.network"] == widgets["restrict.no_password"] == "flag"
    assert widgets["objective"] == widgets["runner"] == widgets["restrict.branch"] == "text"
    # The units offered are the grammar's own (D10), so whatever is picked parses.
    assert {suffix for suffix, _ in create["budget.wall"]["units"]} == set("smhd")
    assert [suffix for suffix, _ in create["budget.memory"]["units"]] == list(grammar.MEMORY_UNITS)
    assert [name for name, spec in create.items() if spec["required"]] == ["objective", "budget", "budget.wall"]
    assert {create[n]["default_now"] for n in ("node", "user", "hears")} == {"this_node", "new_run_user", "admins_now"}
    audit = fields_of("audit")
    assert audit["verdict"]["widget"] == "choice" and audit["verdict"]["choices"] == ["pass", "fail"]
    assert fields_of("post")["text"].get("contentMediaType") == "text/markdown"
    assert "dry_run" not in fields_of("stop")  # the card's two buttons say it


def test_a_form_reads_back_into_the_tools_input():
    form = {"objective": "  Review docs/  ", "checkins": "trunk\r\n\r\ndocs \n", "budget.wall": "2",
            "budget.wall~unit": "h", "budget.memory": "512", "budget.memory~unit": "M", "budget.cpu": "",
            "sandbox.network": "false", "restrict.no_password": "", "restrict.branch": "", "remote": "",
            "dry_run": "true"}
    assert tool_input(catalog.by_name("create"), form) == {
        "objective": "Review docs/", "checkins": ["trunk", "docs"], "budget": {"wall": "2h", "memory": "512M"},
        "sandbox": {"network": False}, "dry_run": True}
    assert tool_input(catalog.by_name("create"), {"budget.memory": "4096", "budget.memory~unit": ""})["budget"] == {
        "memory": 4096}  # bytes: a number, as the grammar takes it
    assert tool_input(catalog.by_name("status"), {}) == {"dry_run": False}


def test_what_a_form_cannot_read_stops_there_naming_the_field():
    create = catalog.by_name("create")
    for form, field in (({"budget.wall": "two", "budget.wall~unit": "h"}, "budget.wall"),
                        ({"budget.wall": "2", "budget.wall~unit": "y"}, "budget.wall"),
                        ({"budget.cpu": "1.5"}, "budget.cpu"),
                        ({"remote": "yes"}, "remote")):
        try:
            tool_input(create, form)
        except FieldError as fault:
            assert fault.field == field, (form, fault)
        else:
            raise AssertionError(f"{form} was read")


line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=20).filter(
    lambda text: text.strip() == text)


@given(objective=line, checkins=st.lists(line, max_size=4), wall=st.integers(1, 10**6),
       unit=st.sampled_from(list(grammar.WALL_UNITS)), network=st.booleans() | st.none(),
       processes=st.integers(1, 10**6) | st.none())
def test_any_values_typed_into_create_come_back_as_typed(objective, checkins, wall, unit, network, processes):
    form = {"objective": objective, "checkins": "\n".join(checkins), "budget.wall": str(wall),
            "budget.wall" + UNIT: unit, "sandbox.network": "" if network is None else json.dumps(network),
            "budget.processes": "" if processes is None else str(processes)}
    read = tool_input(catalog.by_name("create"), form)
    assert read["objective"] == objective and read.get("checkins", []) == checkins
    assert read["budget"] == {"wall": f"{wall}{unit}", **({"processes": processes} if processes else {})}
    assert read.get("sandbox") == (None if network is None else {"network": network})
    assert grammar.parse_wall(read["budget"]["wall"]) == wall * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
