"""The committer line of a check-in in the git mirror (protocol/git_committer.py, D49): the U card
read as Fossil 2.21 reads it, the address by Fossil's rule, and the line the node writes, in which
no U card can end or bend the line while a well-formed one is unchanged."""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ocx.fossil.manifest import escape
from ocx.protocol.git_committer import (
    branch_ref,
    committer_line,
    defossilize,
    deletion_lines,
    fossil_email,
    manifest_user,
    needs_quoting,
    quoted_path,
    sanitized,
    without_signature,
    written_prefix,
)

# git fast-import's committer: `committer NAME <EMAIL> SECONDS +0000`, NAME without '<' or LF, EMAIL without '>' or LF.
GIT_COMMITTER = re.compile(rb"committer [^<>\n]* <[^<>\n]*> -?[0-9]+ \+0000\n")
WELL_FORMED = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<>"), min_size=1)


def manifest(user_card: bytes | None, *, signed: bool = False) -> bytes:
    body = b"C a\\scomment\nD 2024-01-01T00:00:00.000\nF a.txt " + b"0" * 40 + b"\n"
    body += (b"U " + user_card + b"\n") if user_card is not None else b""
    body += b"Z " + b"0" * 32 + b"\n"
    if signed:
        return (b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\nU not-this-one\n\n" + body
                + b"-----BEGIN PGP SIGNATURE-----\n\nU nor-this-one\n-----END PGP SIGNATURE-----\n")
    return body


def test_fossils_escapes_are_undone_as_fossil_undoes_them():
    assert defossilize(b"eve\\nx\\sy\\tz\\\\w") == b"eve\nx y\tz\\w"
    assert defossilize(b"a\\vb\\fc\\rd\\0e") == b"a\vb\fc\rd\x00e"
    assert defossilize(b"a\\qb") == b"aqb"  # an unknown escape: the byte itself
    assert defossilize(b"end\\") == b"end\\"  # a backslash at the end stays


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1))
def test_a_u_card_fossil_writes_reads_back_as_its_user(user):
    # Fossil's commit writes the U card fossilized (manifest.escape is the same encoding).
    assert manifest_user(manifest(escape(user).encode())) == user.encode()
    assert manifest_user(manifest(escape(user).encode(), signed=True)) == user.encode()


def test_a_u_card_reads_as_fossils_export_reads_it():
    assert manifest_user(manifest(b"eve\\ncommitter\\sx\\s<y>\\s1\\s+0000")) == b"eve\ncommitter x <y> 1 +0000"
    assert manifest_user(manifest(b"")) == b"anonymous"  # `U ` with no name
    assert manifest_user(manifest(b"cut\\0here")) == b"cut"  # a C string ends at its NUL
    assert manifest_user(manifest(None)) is None  # only D and Z are required of a manifest
    assert manifest_user(manifest(b"eve", signed=True)) == b"eve"  # not the armour's nor the signature's U
    assert manifest_user(b"U eve\r\nZ x\n") == b"eve\r"  # only a space or a line break ends a token


def test_a_signature_is_removed_as_fossil_removes_it():
    body = b"D 2024-01-01T00:00:00\nZ 00\n"
    assert without_signature(b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: x\r\n\r\n" + body
                             + b"-----BEGIN PGP SIGNATURE-----\nabc\n") == body
    assert without_signature(body) == body
    assert without_signature(b"-----BEGIN PGP SIGNED MESSAGE-----\nno blank line") == (
        b"-----BEGIN PGP SIGNED MESSAGE-----\nno blank line")


def test_the_address_is_found_by_fossils_rule():
    assert fossil_email(b"eve", None) == b"eve@noemail.net"  # no user row
    assert fossil_email(b"eve@x.org", None) == b"eve@x.org"  # no row, an '@': the name itself
    assert fossil_email(None, None) == b"@noemail.net"  # no U card: Fossil's printf of NULL is ""
    assert fossil_email(b"eve", b"") == b""  # the node's row with no address
    assert fossil_email(b"eve", b"eve@x.org") == b"eve@x.org"
    assert fossil_email(b"eve", b"Eve <eve@x.org> and more") == b"eve@x.org"
    assert fossil_email(b"eve", b"Eve <eve@x.org tail> ") == b"eve@x.org"  # cut at a space
    assert fossil_email(b"eve", b"Eve <eve@x.org") == b"eve@x.org"  # no '>': to the end


@given(WELL_FORMED, st.from_regex(r"[a-z0-9.@-]{0,30}", fullmatch=True), st.integers(-(2**40), 2**40))
def test_a_well_formed_committer_is_written_unchanged(user, email, seconds):
    tail = f"{seconds} +0000\n".encode()
    assert committer_line(user.encode(), email.encode(), tail) == written_prefix(user.encode(), email.encode()) + tail


@given(st.binary(), st.binary(), st.integers(-(2**40), 2**40))
def test_no_user_and_no_address_can_end_or_bend_the_line(user, email, seconds):
    line = committer_line(user, email, f"{seconds} +0000\n".encode())
    assert GIT_COMMITTER.fullmatch(line)
    assert line.count(b"\n") == 1 and line.count(b"<") == 1 and line.count(b">") == 1
    assert len(sanitized(user)) == len(user)  # byte for byte: nothing dropped, nothing added


def test_the_forged_u_cards_are_written_harmless():
    tail = b"1700000000 +0000\n"
    assert committer_line(b"eve\ndata 3\nabc", b"", tail) == b"committer eve_data 3_abc <> " + tail
    assert committer_line(b"eve <owner@x> 1 +0000", b"", tail) == b"committer eve _owner@x_ 1 +0000 <> " + tail
    assert committer_line(None, b"@noemail.net", tail) == b"committer (null) <@noemail.net> " + tail


def c_unquoted(quoted: bytes) -> bytes:
    """git's unquote_c_style of the escapes quoted_path writes (octal, \\", \\\\)."""
    body, out, i = quoted[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == 0x5C:
            if body[i + 1] in b'"\\':
                out.append(body[i + 1])
                i += 2
            else:
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
        else:
            out.append(body[i])
            i += 1
    return bytes(out)


@given(st.binary(min_size=1).filter(lambda b: b"\x00" not in b))
def test_a_deleted_name_is_written_as_one_line_git_reads_back_as_the_name(name):
    quoted = quoted_path(name)
    assert quoted.startswith(b'"') and quoted.endswith(b'"') and b"\n" not in quoted
    assert c_unquoted(quoted) == name
    written, safe = deletion_lines([b"plain", name])
    assert written == b"D plain\nD " + name + b"\n"
    assert safe.count(b"\n") == 2 and safe.startswith(b"D plain\nD ")
    assert needs_quoting(name) == (b"\n" in name or name.startswith(b'"'))


def test_a_branch_git_takes_is_unchanged_and_one_it_refuses_is_made_one_it_takes():
    for name in (b"master", b"release/1.0", b"feature-x", b"a.b/c_d", b"unknown"):
        assert branch_ref(name) == name
    assert branch_ref(b"x.lock") == b"x_lock"
    assert branch_ref(b".hidden/a.lock/b") == b"_hidden/a_lock/b"
    assert branch_ref(b"") == b"_" and branch_ref(b"a//b") == b"a/_/b"
