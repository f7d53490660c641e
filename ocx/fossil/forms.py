"""Reading Fossil's HTML forms as a browser would submit them (D21: writes go
through Fossil's own forms, so Fossil records the logged-in caller as sender).

Pure: HTML in, forms out. A form's fields are what a browser would send
without the user touching anything: hidden and text inputs, checked boxes,
each select's selected (or first) option, each textarea's text. Submit
buttons are left out; the caller names the one it presses. Copying every
field matters: 2.27 (source) also requires a hidden `csrf` field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_SENT_INPUTS = frozenset({"hidden", "text", "input", "", "email", "number", "password"})


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    # Selects with no selected option: a browser sends their first option,
    # which may change a value nobody chose (e.g. a ticket's priority).
    defaulted: set[str] = field(default_factory=set)

    def chosen_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.fields.items() if k not in self.defaulted}


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._select: str | None = None
        self._options: list[tuple[str | None, bool, int]] = []  # value, selected, text start
        self._textarea: str | None = None
        self._text: list[str] = []

    def _form(self) -> Form | None:
        return self.forms[-1] if self.forms else None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        form = self._form()
        if tag == "form":
            self.forms.append(Form(a.get("action", ""), a.get("method", "get").upper()))
        elif form is None:
            return
        elif tag == "input" and "name" in a:
            kind = a.get("type", "").lower()
            if kind in _SENT_INPUTS or (kind in ("checkbox", "radio") and "checked" in a):
                form.fields[a["name"]] = a.get("value", "" if kind != "checkbox" else "on")
        elif tag == "select" and "name" in a:
            self._select, self._options, self._text = a["name"], [], []
        elif tag == "option" and self._select is not None:
            self._options.append((a.get("value"), "selected" in a, len(self._text)))
        elif tag == "textarea" and "name" in a:
            self._textarea, self._text = a["name"], []

    def _chosen_option(self) -> str:
        # The selected option, else the first; an option without a value
        # attribute sends its text (up to the next option's start).
        if not self._options:
            return ""
        chosen = next((o for o in self._options if o[1]), self._options[0])
        if chosen[0] is not None:
            return chosen[0]
        index = self._options.index(chosen)
        end = self._options[index + 1][2] if index + 1 < len(self._options) else len(self._text)
        return "".join(self._text[chosen[2] : end]).strip()

    def handle_data(self, data: str) -> None:
        self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        form = self._form()
        if tag == "select" and self._select is not None and form is not None:
            form.fields[self._select] = self._chosen_option()
            if not any(selected for _, selected, _ in self._options):
                form.defaulted.add(self._select)
            self._select = None
        elif tag == "textarea" and self._textarea is not None and form is not None:
            # A browser drops the single newline that may follow <textarea>.
            form.fields[self._textarea] = "".join(self._text).removeprefix("\n")
            self._textarea = None


def forms_in(html: str) -> list[Form]:
    parser = _FormParser()
    parser.feed(html)
    parser.close()
    return parser.forms


def form_posting_to(html: str, action: str) -> Form | None:
    """The first form whose action ends with ACTION (`/forume1`, `/tktedit`)."""
    return next((f for f in forms_in(html) if f.action.split("?")[0].endswith(action)), None)
