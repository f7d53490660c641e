"""The committer line Fossil 2.21's `fossil git export` writes for a check-in, and the one
the node writes instead (D49, D41): pure.

Fossil writes, for each check-in (src/export.c, gitmirror_send_checkin),

    # rid=RID
    committer USER <EMAIL> SECONDS +0000

USER is the manifest's U card as it is, defossilized (anyone pushing writes it: `fossil
commit --user-override`, D21): a line break in it ends the line early and `git fast-import`
dies, stalling the mirror for good; `<`, `>` or a forged ` <a@b> 1 +0000` bend it. So the
node learns, before the export, each check-in's USER and EMAIL from the manifests and the
copy's user table (`manifest_user`, `fossil_email`), and its filter of Fossil's stream
(git/fast_import_filter.py) checks the line is exactly those bytes and writes `committer_line`,
in which no byte can end or bend the line: control characters, `<` and `>` become `_`. A
well-formed U card's line is unchanged byte for byte (the mirror's commit hashes stay).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

PGP_BEGIN = b"-----BEGIN PGP SIGNED MESSAGE-----"
PGP_SIGNATURE = b"\n-----BEGIN PGP SIGNATURE"  # strncmp's 25 bytes of "\n-----BEGIN PGP SIGNATURE-"
NO_USER = b"(null)"  # glibc's printf of Fossil's NULL zUser: a manifest with no U card (only D and Z are required)
NO_ADDRESS = b"@noemail.net"  # Fossil's own suffix for a name with no user row and no '@'
_UNSAFE = re.compile(rb"[\x00-\x1f\x7f<>]")
# What follows the address: Fossil's `%lld` of the D card's seconds (before 1970: negative).
TIME_TAIL = re.compile(rb"-?[0-9]{1,20} \+0000\n")
_ESCAPES = {ord("n"): b"\n", ord("s"): b" ", ord("t"): b"\t", ord("r"): b"\r", ord("v"): b"\v", ord("f"): b"\f",
            ord("0"): b"\x00", ord("\\"): b"\\"}


def defossilize(text: bytes) -> bytes:
    """TEXT with Fossil's card escapes undone (src/encode.c, defossilize): `\\n`, `\\s`, `\\t`, `\\r`,
    `\\v`, `\\f`, `\\0`, `\\\\`; a backslash before any other byte is dropped; one at the end stays."""
    out = bytearray()
    i = 0
    while i < len(text):
        byte = text[i]
        if byte == 0x5C and i + 1 < len(text):
            i += 1
            out += _ESCAPES.get(text[i], text[i:i + 1])
        else:
            out.append(byte)
        i += 1
    return bytes(out)


def c_string(text: bytes) -> bytes:
    """TEXT as C reads it: up to its first NUL."""
    return text.split(b"\x00", 1)[0]


def _after_blank_line(data: bytes, i: int) -> bool:
    return data[i - 1:i] == b"\n" and (data[i - 2:i - 1] == b"\n" or data[i - 3:i - 1] == b"\n\r")


def without_signature(data: bytes) -> bytes:
    """DATA with a PGP clear-signature's wrapping removed as Fossil 2.21 removes it
    (src/manifest.c, remove_pgp_signature): from after the first blank line to the last
    line starting `-----BEGIN PGP SIGNATURE`."""
    if not data.startswith(PGP_BEGIN):
        return data
    i = len(PGP_BEGIN)
    while i < len(data) and not _after_blank_line(data, i):
        i += 1
    if i >= len(data):
        return data
    body = data[i:]
    end = body.rfind(PGP_SIGNATURE)
    return body[:end + 1] if end >= 0 else body


def manifest_user(manifest: bytes) -> bytes | None:
    """The user Fossil's export writes for a check-in's MANIFEST (its zUser): the U card's first
    token, defossilized, up to a NUL; `anonymous` for an empty one; None with no U card."""
    for line in without_signature(manifest).split(b"\n"):
        if line == b"U" or line.startswith(b"U "):
            token = re.split(rb"[ \n]", line[2:], maxsplit=1)[0]
            return c_string(defossilize(token)) if token else b"anonymous"
    return None


def _cut_at_space(text: bytes) -> bytes:
    """TEXT up to its first byte Fossil's fossil_isspace calls a space."""
    match = re.search(rb"[ \t\n\v\f\r]", text)
    return text[:match.start()] if match else text


def fossil_email(user: bytes | None, info: bytes | None) -> bytes:
    """The address Fossil 2.21's export writes for USER, given the user table's info for that login
    (None: no row): no row, USER itself when it holds '@', else USER@noemail.net; an info holding
    '<' the text between it and the next '>' up to a space; otherwise the info as is."""
    if info is None:
        if user is None or b"@" not in user:
            return (user or b"") + NO_ADDRESS
        return user
    info = c_string(info)
    start = info.find(b"<")
    if start < 0:
        return info
    inside = info[start + 1:]
    end = inside.find(b">")
    return _cut_at_space(inside[:end] if end >= 0 else inside)


def written_prefix(user: bytes | None, email: bytes) -> bytes:
    """What Fossil writes of a check-in's committer line before its seconds."""
    return b"committer " + (NO_USER if user is None else user) + b" <" + email + b"> "


def sanitized(text: bytes) -> bytes:
    """TEXT with every byte that could end or bend a committer line (controls, '<', '>') made '_'."""
    return _UNSAFE.sub(b"_", text)


def committer_line(user: bytes | None, email: bytes, time_tail: bytes) -> bytes:
    """The committer line the node writes: USER and EMAIL sanitized, then TIME_TAIL as Fossil wrote it."""
    return b"committer " + sanitized(NO_USER if user is None else user) + b" <" + sanitized(email) + b"> " + time_tail


# Deleted files. Fossil 2.21 writes `D NAME` with the name as it is (its `M` lines are quoted):
# a name holding a line break (an F card may: Fossil checks only its slashes and dots) ends the
# line and what follows in it is read by git as commands of the stream (a file, a commit, a
# branch reset: anything), and one starting with '"' is read as a quoted name that does not end.
def needs_quoting(name: bytes) -> bool:
    """Whether Fossil's `D NAME` line would be read by git as anything but NAME deleted."""
    return b"\n" in name or name.startswith(b'"')


def quoted_path(name: bytes) -> bytes:
    """NAME in git fast-import's C-style quotes: '"', '\\' and every control byte escaped."""
    out = bytearray(b'"')
    for byte in name:
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def deletion_lines(names: list[bytes]) -> tuple[bytes, bytes]:
    """The `D` lines Fossil writes for NAMES (in its order), and the ones the node writes instead."""
    written = b"".join(b"D " + name + b"\n" for name in names)
    safe = b"".join(b"D " + (quoted_path(name) if needs_quoting(name) else name) + b"\n" for name in names)
    return written, safe


@dataclass(frozen=True)
class StreamFacts:
    """What the node knows, before an export, of what Fossil will write (the filter checks it):
    each unsent check-in's (user, email) by its rid, and for a check-in whose deleted files hold
    a name git would misread, their names in the order Fossil writes them."""

    committers: dict[int, tuple[bytes | None, bytes]] = field(default_factory=dict)
    deletions: dict[int, list[bytes]] = field(default_factory=dict)


def branch_ref(name: bytes) -> bytes:
    """NAME (a branch as Fossil's export wrote it, sanitized by its own rule) made a name git takes
    as a ref: Fossil leaves a component that is empty, starts with '.' or ends with `.lock`, and git
    stops the whole import at it (`Branch name doesn't conform to GIT standards`); a valid name is
    unchanged."""
    parts = []
    for part in name.split(b"/"):
        if part.startswith(b"."):
            part = b"_" + part[1:]
        if part.endswith(b".lock"):
            part = part[:-5] + b"_lock"
        parts.append(part or b"_")
    return b"/".join(parts)
