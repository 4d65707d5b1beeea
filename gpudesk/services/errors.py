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
