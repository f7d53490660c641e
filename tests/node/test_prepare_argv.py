"""A run's preparation is told what to make on its command line (units' ExecStartPre, D34):
what the node writes (Preparation.argv) is what the step reads back (parse), and nothing else
is taken. Pure: no Fossil, no systemd."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ocx.run_steps.prepare import Preparation, parse

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
                max_size=30)


@given(user=_text, checkin=st.none() | st.text("0123456789abcdef", min_size=40, max_size=40),
       pull=st.booleans(), keep_password=st.booleans(), homes=st.lists(_text, max_size=3),
       keep=st.lists(st.tuples(st.integers(0, 5), _text.filter(lambda t: ":" not in t)), max_size=3),
       elsewhere=st.booleans(), order=st.none() | st.integers(0, 2**62))
def test_what_the_node_writes_is_what_the_step_reads(user, checkin, pull, keep_password, homes, keep, elsewhere,
                                                     order):
    step = Preparation("/srv/r.fossil", "http://127.0.0.1:8080", user, Path("/var/lib/private/ocx-x/home"),
                       Path("/var/lib/ocx/n/records/abc"), "ocx-a-b", Path("/var/lib/ocx/n/home"),
                       Path("/var/lib/ocx/n/runs.fossil"), pull, keep_password=keep_password, checkin=checkin,
                       runner_homes=tuple(homes), keep=tuple(keep),
                       server_login="ocx-node" if elsewhere else None,
                       server_password_file="/etc/ocx/n.password" if elsewhere else None, order=order)
    assert parse(step.argv()) == step


@pytest.mark.parametrize("argv", [
    [],  # nothing required given
    ["--repository", "/r"],  # the rest missing
    ["--repository", "/r", "--repository", "/s"],  # one given twice
    ["--bogus", "x"],
    ["--user"],  # an option without its value
])
def test_anything_else_is_refused(argv):
    with pytest.raises(SystemExit):
        parse(argv)
