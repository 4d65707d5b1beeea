"""The scripts gpudesk sends to a machine, each made one self-contained source.

The run launcher (``run_launcher_script.py``) and the queue helper (``agent/queue.py``)
run on the machine as ``python3 -I -S -c <source>`` (or from one file the agent keeps),
where no ``gpudesk`` package can be imported. What they share with the agent,
``agent/run_folder.py`` (stdlib only), is therefore put in their source in place of their
``run_folder`` import lines: one logic, kept once, that every copy sent carries. Every
place that reads these scripts for sending reads them here.
"""

from __future__ import annotations

import base64
import importlib.resources
import re
import shlex
import zlib

_SHARED = ("gpudesk.agent", "run_folder.py")
# ``from gpudesk.agent.run_folder import NAME`` (the launcher) or ``from .run_folder import
# NAME`` (the agent's own modules), one name a line as the project's imports are written
_SHARED_IMPORT = re.compile(r"^from (?:gpudesk\.agent)?\.run_folder import \w+[ \t]*\n",
                            re.MULTILINE)
_FUTURE = "from __future__ import annotations\n"


def _read(package: str, name: str) -> str:
    return importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")


def shipped_source(package: str, name: str) -> str:
    """``package``'s file ``name`` with ``run_folder.py`` in place of its imports of it (at
    the first, so after the script's own ``from __future__`` line, whose copy in
    ``run_folder.py`` is dropped: a second one there would be a syntax error)."""
    source = _read(package, name)
    found = _SHARED_IMPORT.search(source)
    if found is None:
        return source
    shared = _read(*_SHARED).replace(_FUTURE, "", 1)
    rest = _SHARED_IMPORT.sub("", source[found.start():])
    return f"{source[:found.start()]}# ---- {_SHARED[1]}, sent with it\n{shared}\n{rest}"


def launcher_source() -> str:
    """The run launcher as sent: over SSH (``detached``), to the queue folder the agent
    starts queued runs from (``run_queue``) and in the keep-alive bundle (``run_package``)."""
    return shipped_source("gpudesk.services.runs", "run_launcher_script.py")


def queue_source() -> str:
    """``agent/queue.py`` as the desktop runs it over SSH (``run_queue``)."""
    return shipped_source("gpudesk.agent", "queue.py")


def python_c_command(python: str, source: str, filename: str, *args: str) -> str:
    """``exec python -I -S -c <source> ARGS`` for a shell, the source compressed into one
    word; ``filename`` is what a traceback names."""
    blob = base64.b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")
    code = ("import base64,sys,zlib;exec(compile(zlib.decompress(base64.b64decode('" + blob
            + f"')),'{filename}','exec'),{{'__name__':'__main__'}})")
    words = " ".join(shlex.quote(a) for a in args)
    return f'exec {shlex.quote(python)} -I -S -c "{code}" {words}'
