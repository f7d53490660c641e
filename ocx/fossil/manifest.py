"""A pure parser of Fossil's artifact cards (fossil-scm.org fileformat page).

An artifact is lines `X ARG ARG...`, one card a line, in Fossil's order; the
W card is followed by exactly N bytes of text and a newline. Arguments that
may hold spaces are escaped by Fossil (`\\s` space, `\\n` newline, `\\\\`
backslash, and a few more); `unescape` undoes it. Nothing here trusts a card:
the U card in particular is whatever the writer's clone said (D21).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from ..protocol.hashes import is_full_hash
from ..protocol.numerals import is_digits
from .errors import FossilLayerError

_ESCAPES = {"s": " ", "n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "0": "\0", "\\": "\\"}
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_SIZE_DIGITS = 12  # a W card's byte count: a terabyte's digits, never one int() refuses
_PGP_HEAD = b"-----BEGIN PGP SIGNED MESSAGE-----"
_PGP_SIGNATURE = b"\n-----BEGIN PGP SIGNATURE-----"


class ManifestError(FossilLayerError, ValueError):
    """Bytes that are not a structural artifact."""


_FOSSILIZE = {v: "\\" + k for k, v in _ESCAPES.items()}


def escape(text: str) -> str:
    """Fossil's fossilize, the inverse of `unescape`."""
    return "".join(_FOSSILIZE.get(c, c) for c in text)


def unescape(text: str) -> str:
    """Fossil's defossilize: `\\s` → space, `\\n` → newline, `\\\\` → `\\`."""
    if "\\" not in text:
        return text  # most arguments: nothing escaped
    return _ESCAPED.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


class Card(NamedTuple):  # a tuple: a pass builds hundreds of thousands
    letter: str
    args: tuple[str, ...]  # raw, still escaped: unescape the ones that may be


@dataclass(frozen=True)
class TagCard:
    op: str  # "+" add, "-" cancel, "*" add and propagate
    name: str  # as written, e.g. "sym-audited" or "branch"
    target: str  # a full hash, or "*" for the artifact itself (a check-in)
    value: str | None


@dataclass(frozen=True)
class TicketField:
    name: str
    value: str
    append: bool  # `J +NAME TEXT` appends to the field instead of setting it


@dataclass(frozen=True)
class Artifact:
    cards: tuple[Card, ...]
    wiki: str | None  # the W card's text, decoded as UTF-8

    def all(self, letter: str) -> tuple[Card, ...]:
        return tuple(c for c in self.cards if c.letter == letter)

    def first(self, letter: str) -> Card | None:
        return next((c for c in self.cards if c.letter == letter), None)

    def text(self, letter: str) -> str | None:
        """The unescaped first argument of the first LETTER card."""
        card = self.first(letter)
        return unescape(card.args[0]) if card and card.args else None

    @property
    def user(self) -> str | None:  # the U card: a claim, never a sender
        return self.text("U")

    @property
    def date(self) -> str | None:
        return self.text("D")

    @property
    def comment(self) -> str | None:
        return self.text("C")

    @property
    def parents(self) -> tuple[str, ...]:
        card = self.first("P")
        return card.args if card else ()

    @property
    def tags(self) -> tuple[TagCard, ...]:
        return tuple(_tag_card(c) for c in self.all("T"))

    @property
    def ticket_fields(self) -> tuple[TicketField, ...]:
        return tuple(_ticket_field(c) for c in self.all("J"))


def _tag_card(card: Card) -> TagCard:
    if len(card.args) < 2 or not card.args[0] or card.args[0][0] not in "+-*":
        raise ManifestError(f"malformed T card {card.args!r}")
    value = unescape(card.args[2]) if len(card.args) > 2 else None
    return TagCard(card.args[0][0], unescape(card.args[0][1:]), card.args[1], value)


def _ticket_field(card: Card) -> TicketField:
    if not card.args:
        raise ManifestError("J card without a field name")
    name = card.args[0]
    value = unescape(card.args[1]) if len(card.args) > 1 else ""
    return TicketField(name.lstrip("+"), value, name.startswith("+"))


def strip_signature(data: bytes) -> bytes:
    """A clear-signed artifact's signed text: Fossil ignores the signature."""
    if not data.startswith(_PGP_HEAD):
        return data
    body_start = data.find(b"\n\n")
    end = data.find(_PGP_SIGNATURE)
    if body_start < 0 or end < 0:
        raise ManifestError("unterminated PGP signed artifact")
    return data[body_start + 2 : end + 1]


def parse(data: bytes) -> Artifact:
    """The cards of an artifact's bytes; ManifestError if they are not cards."""
    data = strip_signature(data)
    cards: list[Card] = []
    wiki: str | None = None
    pos, size_of_data = 0, len(data)
    find, append = data.find, cards.append
    while pos < size_of_data:
        end = find(b"\n", pos)
        if end < 0:
            raise ManifestError("artifact does not end with a newline")
        letter = data[pos]
        if not 65 <= letter <= 90 or (end > pos + 1 and data[pos + 1] != 32):  # A..Z, then a space
            raise ManifestError(f"not a card: {data[pos:min(end, pos + 40)].decode('utf-8', 'replace')!r}")
        args = tuple(data[pos + 2:end].decode("utf-8", errors="strict").split(" ")) if end > pos + 2 else ()
        pos = end + 1
        if letter == 87:  # W: its text follows, by byte count
            if len(args) != 1 or not is_digits(args[0]) or len(args[0]) > _SIZE_DIGITS:  # 0-9: `³` is isdigit
                raise ManifestError("W card without a byte count")
            size = int(args[0])
            if data[pos + size : pos + size + 1] != b"\n":
                raise ManifestError("W card text not followed by a newline")
            wiki = data[pos : pos + size].decode("utf-8", errors="replace")
            pos += size + 1
        append(Card(chr(letter), args))
    if not cards or cards[-1].letter != "Z" or not cards[-1].args:
        raise ManifestError("artifact has no final Z card")
    # The Z card is the MD5 of everything before it, as Fossil checks.
    import hashlib  # here: OpenSSL's start is a tenth of a preparation's imports, which never parses

    z_line = data.rfind(b"\nZ ", 0, len(data) - 1) + 1
    if hashlib.md5(data[:z_line]).hexdigest() != cards[-1].args[0]:
        raise ManifestError("Z card checksum does not match")
    return Artifact(tuple(cards), wiki)


def is_artifact(data: bytes) -> bool:
    try:
        parse(data)
    except (ManifestError, UnicodeDecodeError):
        return False
    return True


# date_in_standard_format's, in 0-9 only: \d and strptime's %Y take the digits of every script,
# and Fossil's form never writes those, so such a blob is no post of the form's (a run's, to hold receipts).
_FORM_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}", re.ASCII)
_ONE_ARGUMENT = frozenset("DGHINPU")
# The cards' letters of a new thread (H), a reply (G I), an edit of either (G … P), each with or without N.
_FORM_SHAPES = frozenset({"DHUWZ", "DHNUWZ", "DGIUWZ", "DGINUWZ", "DGHPUWZ", "DGHNPUWZ", "DGIPUWZ", "DGINPUWZ"})


def is_form_post(artifact: Artifact) -> bool:
    """Exactly the shape Fossil 2.21's forum form writes (forum.c, forum_post), checked as strictly
    as Fossil does: `D` (its date, milliseconds included), `G` root only for a reply or an edit, `H`
    title xor `I` in-reply-to, `N`, `P` edited, `U`, `W`, `Z`, each once, in that order. The form
    stores the blob before crosslinking it, so only such a post may lack its event row for a moment
    (Repository.unsettled); a blob of any other shape came by sync, which crosslinks in the same
    transaction, so without its event row it never gets one, and must hold nothing back (a run
    that pushed `D`+`Z` held every later receipt for a minute)."""
    letters = "".join(card.letter for card in artifact.cards)
    if letters not in _FORM_SHAPES:
        return False
    for card in artifact.cards:
        if card.letter in _ONE_ARGUMENT and (len(card.args) != 1 or not card.args[0]):
            return False
        if card.letter in "GIP" and not is_full_hash(card.args[0]):
            return False
    date = artifact.cards[0].args[0]
    try:
        return bool(_FORM_DATE.fullmatch(date)) and datetime.strptime(date, "%Y-%m-%dT%H:%M:%S.%f") is not None
    except ValueError:  # the form's shape, but no such day or hour (a 13th month)
        return False


def tag_change(target: str, name: str, value: str | None, user: str, when: datetime) -> bytes:
    """The control artifact `fossil tag add NAME TARGET VALUE` writes: D, one
    `T +sym-NAME TARGET VALUE`, U, and Z (the MD5 of what precedes it)."""
    if not is_full_hash(target):
        raise ManifestError(f"a tag's target must be a full hash, not {target!r}")
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    tag = f"T +sym-{escape(name)} {target}" + (f" {escape(value)}" if value is not None else "")
    body = f"D {stamp}\n{tag}\nU {escape(user)}\n".encode()
    import hashlib  # see parse

    return body + b"Z " + hashlib.md5(body).hexdigest().encode() + b"\n"
