"""Field types shared by the messages: names, paths and hashes (C2, D11, D16)."""
from __future__ import annotations

import json
import re
from typing import Annotated

from pydantic import AfterValidator

from .hashes import FULL_HASH, SERVER_CODE

# Fossil logins are free text; OCX holds them to what is safe in a unit's
# Description, an environment variable and a URL without quoting.
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_RUNNER = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
# A branch name as Fossil takes it, less what would break one line of text.
# Spaces as str.isspace knows them, spelled out: \s's meaning changes with re.ASCII.
_BRANCH = re.compile(r"[^\x00-\x20\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]{1,200}")


def _matching(pattern: re.Pattern[str], what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):  # the whole value: `$` would take "x\n" (hashes.py)
            raise ValueError(f"{json.dumps(value)} is not {what}")
        return value

    return AfterValidator(check)


def _absolute_path(value: str) -> str:
    # D16: relative paths are refused; ".." would let a path escape what it names.
    if not value.startswith("/"):
        raise ValueError(f"{json.dumps(value)} is not an absolute path")
    if any(ord(c) < 32 or ord(c) == 0x7F for c in value) or any(part == ".." for part in value.split("/")):
        raise ValueError(f"{json.dumps(value)} is not a plain absolute path (no '..', no control character)")
    return value


def _relative_path(value: str) -> str:
    # D42: a file below a home, named plainly: never absolute, never climbing out.
    names = value.split("/")
    if value.startswith("/") or any(n in ("", ".", "..") for n in names) or any(ord(c) < 32 for c in value):
        raise ValueError(f"{json.dumps(value)} is not a plain relative path (no leading '/', '..', '.', "
                         "empty part or control character)")
    return value


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty")
    return value


Login = Annotated[str, _matching(_LOGIN, "a Fossil login OCX accepts (letters, digits, . _ @ + -)")]
RunnerName = Annotated[str, _matching(_RUNNER, "a runner name (lower-case letters, digits, _ and -)")]
BranchName = Annotated[str, _matching(_BRANCH, "a branch name (no spaces or control characters)")]
FullHash = Annotated[str, _matching(FULL_HASH, "a full artifact hash (40 or 64 lower-case hex digits)")]
ServerCode = Annotated[str, _matching(SERVER_CODE, "a server-code (40 lower-case hex digits)")]
AbsolutePath = Annotated[str, AfterValidator(_absolute_path)]
RelativePath = Annotated[str, AfterValidator(_relative_path)]
Text = Annotated[str, AfterValidator(_non_empty)]
