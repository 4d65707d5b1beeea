"""Marks user-facing strings in Qt-free code for Qt's translation tools.

``pyside6-lupdate`` finds ``QT_TRANSLATE_NOOP(context, text)`` by name, so the
core can mark its messages without importing Qt; the window translates them
with ``QCoreApplication.translate(context, text)`` when it shows them.

A few words are not whole messages but names the core puts into many of them
(a cloud's title: "Tencent Cloud"). :func:`name` translates those through the
function the window installs with :func:`use_translate` (Qt's
``QCoreApplication.translate``); without one (the CLI, the agent) they stay in
English, as every other core message does.

House form of a message: the name opens the call and the context and text
follow on the next line(s), ``NAME = QT_TRANSLATE_NOOP(\n    "Context", "text")``,
whatever the text's length, so that a module's messages read as one list.
"""

from collections.abc import Callable

_translate: Callable[[str, str], str] | None = None


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - name lupdate knows
    del context
    return text


def use_translate(translate: Callable[[str, str], str] | None) -> None:
    """Install (or, with None, remove) the function :func:`name` translates with."""
    global _translate
    _translate = translate


def name(context: str, text: str) -> str:
    """``text`` (marked with ``QT_TRANSLATE_NOOP`` in ``context``) in the window's
    language when the window installed a translate function, else as it is."""
    return _translate(context, text) if _translate is not None else text
