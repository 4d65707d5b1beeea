"""The one shape of a service error: an English template plus values, translated where shown.

Subclasses set ``translation_context`` (the Qt context the template is marked
in); the window looks the template up there, the CLI prints ``message()``.
"""

from __future__ import annotations

from typing import Any


class TemplatedError(RuntimeError):
    translation_context = ""

    def __init__(self, template: str, **values: Any) -> None:
        self.template = template
        self.values = values
        super().__init__(template.format(**values))

    def message(self) -> str:
        return self.template.format(**self.values)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by state, not by ``__init__`` arguments (subclasses take their own): the
        sync child process sends its errors back to the app as the same types."""
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[TemplatedError], args: tuple[Any, ...],
             state: dict[str, Any]) -> TemplatedError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error
