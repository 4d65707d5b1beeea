"""Marks user-facing strings in Qt-free code for Qt's translation tools.

``pyside6-lupdate`` finds ``QT_TRANSLATE_NOOP(context, text)`` by name, so the
core can mark its messages without importing Qt; the window translates them
with ``QCoreApplication.translate(context, text)`` when it shows them.
"""


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - name lupdate knows
    del context
    return text
