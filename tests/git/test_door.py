"""/ext/git's door (ocx/page/git_door.py, D49): what it refuses before git runs, and
the bound on a body it inflates. The whole door, behind the real Fossil
server and with the real git client, is tests/node_system/test_git.py's."""
from __future__ import annotations

import gzip

from ocx.page import git_door as door


def request(**environ: str) -> dict[str, str]:
    return {"PATH_INFO": "/info/refs", "QUERY_STRING": "service=git-upload-pack", "REQUEST_METHOD": "GET", **environ}


def test_fossils_read_right_decides():
    assert door.refusal(request(FOSSIL_CAPABILITIES="chmno", FOSSIL_USER="alice")) is None
    assert door.refusal(request(FOSSIL_CAPABILITIES="gjorz")) is None  # anonymous, where Fossil lets nobody read
    status, _, headers = door.refusal(request(FOSSIL_CAPABILITIES="hmnc"))
    assert status.startswith("401") and "WWW-Authenticate: Basic" in headers
    status, _, headers = door.refusal(request(FOSSIL_CAPABILITIES="hmnc", FOSSIL_USER="carol"))
    assert status.startswith("403") and not headers


def test_a_push_is_refused_before_any_right_is_looked_at_and_only_a_fetch_is_served():
    for environ in (request(QUERY_STRING="service=git-receive-pack", FOSSIL_CAPABILITIES="s", FOSSIL_USER="admin"),
                    request(PATH_INFO="/git-receive-pack", FOSSIL_CAPABILITIES="")):
        status, text, _ = door.refusal(environ)
        assert status.startswith("403") and "ocx git import" in text
    for path in ("/objects/info/packs", "/config", "/../../etc/passwd", "/info/refs/x"):
        status, _, _ = door.refusal(request(PATH_INFO=path, FOSSIL_CAPABILITIES="o"))
        assert status.startswith("404"), path


def test_a_gzipped_body_is_inflated_within_its_bound():
    body = b"0032want " + b"a" * 40 + b"\n00000009done\n"
    assert door.inflated(body) == body
    assert door.inflated(gzip.compress(body)) == body
    assert door.inflated(gzip.compress(b"\0" * (door.BODY_MAX + 1))) is None  # a bomb: refused, not inflated
    assert door.inflated(b"\x1f\x8bnot gzip at all") is None
