"""The run user, given exactly D19's letters and a new password by a run's preparation (C5, D19, D37).

On the server's node the preparation sets them on the served repository
itself; on a node elsewhere the server's node grants them (D37). Either way
what it finds first decides whether it may (letters.py: D40 again at the
delayed start, D24), and it never resets letters it finds changed.
Standard library and ocx.fossil only, as prepare.py.
"""
from __future__ import annotations

from pathlib import Path

from ..fossil import admin
from ..fossil.errors import UnknownUser
from ..node.letters import (
    RUN_USER_CAPABILITIES,
    LettersChanged,
    NotIdle,
    check_found,
    gave_letters,
    letters_set,
    note_given,
)

__all__ = ["RUN_USER_CAPABILITIES", "ensure_run_user", "granted_run_user"]


def ensure_run_user(repository_file: str, login: str, *, fossil_home: Path, record_dir: Path, password: str) -> None:
    """The run user with exactly D19's letters and PASSWORD, new (chosen by the preparation, prepare.py), made
    if new (C5), and remembered to work for this node (D37). What it finds decides whether it may
    (letters.py: D40, D24): never reset."""
    from ..fossil.repository import Repository  # here, in its own thread, beside the home's making
    from ..node.serving.ownership import contact_naming, works_for_text

    with Repository(repository_file) as repository:
        node = repository.server_code
        try:
            found = repository.user(login)
            contact, held, exists = found.contact, found.capabilities, True
        except UnknownUser:
            contact, held, exists = "", None, False
    check_found(login, held, given=gave_letters(record_dir), settled=letters_set(record_dir))
    note_given(record_dir, login)
    if not exists:
        admin.create_user(repository_file, login, RUN_USER_CAPABILITIES, contact_naming("", node),
                          home=fossil_home, password=password)
    else:
        admin.set_capabilities(repository_file, login, RUN_USER_CAPABILITIES, home=fossil_home)
        if works_for_text(contact) is None:
            admin.set_contact(repository_file, login, contact_naming(contact, node), home=fossil_home)
        admin.set_password(repository_file, login, password, home=fossil_home)
    note_given(record_dir, login, done=True)


def granted_run_user(url: str, server_login: str, password_file: str, user: str, record_dir: Path) -> str:
    """A node elsewhere's run user, given its letters and a new password by the server's node (D37):
    the password comes back in the answer only, read here, kept nowhere but the run's clone."""
    from ..node.server_link import ServerLink, ServerRefused, session_file

    password = Path(password_file).read_text().strip()
    # The node's session, kept in its state (the record's directory is STATE/records/HASH): no new login.
    link = ServerLink(url, server_login, password, kept=session_file(record_dir.parent.parent))
    ours = letters_set(record_dir)
    try:  # the server's node checks the letters it finds (serving/grants.py): refused naming `user`
        login, secret = link.grant(record_dir.name)
    except ServerRefused as refused:  # as check_found would: never withdrawn unless this record gave them
        if refused.field != "user":
            raise
        raise (LettersChanged if ours else NotIdle)(str(refused)) from None
    note_given(record_dir, user, done=True)  # after: a refused grant gave nothing to take back
    if login != user:
        raise RuntimeError(f"the server's node granted {login}, not {user}")
    return secret
