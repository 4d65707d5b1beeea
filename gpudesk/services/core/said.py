"""A message that is plain text where printed and a template + values where translated.

Services say things in English (the CLI prints them); the window looks the template up
in ``context`` and fills the values, so one object serves both without a second copy.
"""

from __future__ import annotations

from typing import Any


class Said(str):
    """A ``gpudesk:`` log line: plain text for the CLI, and its template and values (in
    ``context``) so that the window can show it translated. Values may be Said too."""

    context: str
    template: str
    values: dict[str, Any]

    def __new__(cls, context: str, template: str, **values: Any) -> Said:
        made = super().__new__(cls, template.format(**values))
        made.context, made.template, made.values = context, template, values
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return (_said, (self.context, self.template, self.values))

    def to_json(self) -> dict[str, Any]:
        return {"context": self.context, "template": self.template,
                "values": {k: v.to_json() if isinstance(v, Said) else v
                           for k, v in self.values.items()}}

    @classmethod
    def from_json(cls, data: Any) -> str:
        """A note as saved in a record; a plain string stays one."""
        if not isinstance(data, dict):
            return str(data)
        try:
            values = {k: cls.from_json(v) if isinstance(v, dict) else v
                      for k, v in dict(data.get("values") or {}).items()}
            return cls(str(data["context"]), str(data["template"]), **values)
        except (KeyError, IndexError, ValueError, TypeError):
            return str(data.get("template", ""))


# A sentence not yet translated: its template (in a context its caller knows) and values;
# the window translates the template and fills it, the CLI prints it as it is.
Sentence = tuple[str, dict[str, object]]


def in_english(sentence: Sentence) -> str:
    """The sentence filled in, untranslated: what the CLI prints and a record keeps."""
    template, values = sentence
    return template.format(**values)


def _said(context: str, template: str, values: dict[str, Any]) -> Said:
    return Said(context, template, **values)


def said_of(error: BaseException) -> str:
    """A templated error as a Said, so a window shows it in its own language where the
    error is a part of a longer message (issue 31); its English text where it carries no
    template, or where its own message fills more than its template and values say."""
    template = getattr(error, "template", None)
    values = getattr(error, "values", None)
    message = getattr(error, "message", None)
    english = str(message()) if callable(message) else str(error)
    if not isinstance(template, str) or not isinstance(values, dict):
        return english
    context = getattr(error, "translation_context", "") or "SizingError"
    try:
        said = Said(context, template, **values)
    except (KeyError, IndexError, ValueError):
        return english
    return said if str(said) == english else english
