"""A service's message (``Said``: template + values) in the window's language.

Services speak English templates; every page shows them through this one lookup, so a
message is translated the same way in the run log, the outputs panel and Instances.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from gpudesk.services.core.said import Said


def said_text(line: str) -> str:
    """``line`` translated when it is a Said (values that are Said too); a plain string
    stays as it is."""
    if not isinstance(line, Said):
        return line
    # a plain value that is itself one of the context's words (an SSH error's plain why)
    # is translated too
    values = {k: said_text(v) if isinstance(v, Said) else
              QCoreApplication.translate(line.context, v) if isinstance(v, str) and v else v
              for k, v in line.values.items()}
    try:
        return QCoreApplication.translate(line.context, line.template).format(**values)
    except (KeyError, IndexError, ValueError):
        return str(line)
