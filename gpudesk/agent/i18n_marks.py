"""Marks the agent's words for Qt's translation tools; the machine has no Qt.

``pyside6-lupdate`` finds ``QT_TRANSLATE_NOOP(context, text)`` by name. The agent
writes its events and log lines in English with these templates; the desktop
translates the template and fills in the values when it shows them. The agent's
own copy of ``gpudesk/i18n_marks.py``, which it cannot import once uploaded.
"""

from __future__ import annotations


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - the name lupdate finds
    del context
    return text
