"""The ledger shared by every gpudesk process at once never loses or corrupts a row.

The window keeps one ledger open for hours; beside it the same process opens short
``with Ledger()`` ones, and other processes (the CLI in a terminal, a writer that is
SIGKILLed midway, a reader that opens and closes in a loop as the sync child and
``gpudesk ls`` do) write and read the same file. On POSIX, any descriptor of the file
closed outside SQLite drops the process's locks, and another process's close then
deletes the WAL under the window's live connection ("disk I/O error", "database disk
image is malformed", rows gone). After the dance: ``PRAGMA integrity_check`` is ok and
every row any process committed is there.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import ledger_file
from gpudesk.services.money.ledger import new_ledger_id

WRITER = """
import sys
from gpudesk.services.money.ledger import Ledger, Machine, new_ledger_id
ledger = Ledger()
i = 0
while True:  # until SIGKILLed, printing each row only after its commit
    name = f"killed-{i}"
    ledger.add(Machine(id=new_ledger_id(), provider="own", state="ready", name=name))
    print(name, flush=True)
    i += 1
"""

READER = """
import sys
from gpudesk.services.money.ledger import Ledger
for _ in range(int(sys.argv[1])):
    with Ledger() as ledger:
        ledger.machines()
print("read", flush=True)
"""


def _own(name: str) -> Machine:
    return Machine(id=new_ledger_id(), provider="own", state="ready", name=name)


def test_window_short_ledgers_cli_reader_and_a_killed_writer_lose_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    window = Ledger()  # the window's: open for the whole test
    written: list[str] = []

    writer = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE,
                              text=True, env=env)
    reader = subprocess.Popen([sys.executable, "-c", READER, "60"], stdout=subprocess.PIPE,
                              text=True, env=env)
    cli_names = [f"cli-{i}" for i in range(4)]
    cli_done: list[subprocess.CompletedProcess[str]] = []

    def cli_loop() -> None:
        for name in cli_names:
            cli_done.append(subprocess.run(
                [sys.executable, "-m", "gpudesk", "add-machine", name, "ssh://u@127.0.0.1:22",
                 "--no-test"],
                capture_output=True, text=True, env=env, timeout=120))

    cli = threading.Thread(target=cli_loop)
    cli.start()

    killed: list[str] = []
    assert writer.stdout is not None
    i = 0
    while cli.is_alive() or not killed:
        window.add(_own(f"window-{i}"))
        written.append(f"window-{i}")
        with Ledger() as short:  # e.g. the Run page's own short ledger
            short.add(_own(f"short-{i}"))
            written.append(f"short-{i}")
            short.machines()
        if not killed and i >= 5:
            line = writer.stdout.readline().strip()  # it has committed at least one row
            while len(killed) < 10 and line:
                killed.append(line)
                line = writer.stdout.readline().strip()
            writer.send_signal(signal.SIGKILL)  # midway through its next write
            writer.wait(timeout=60)
        i += 1
    cli.join()
    writer.stdout.close()
    assert reader.communicate(timeout=300)[0].strip() == "read" and reader.returncode == 0
    window.add(_own("window-last"))  # the window writes on after all of that
    written.append("window-last")
    window.close()

    assert [r.returncode for r in cli_done] == [0] * len(cli_names), \
        [r.stderr for r in cli_done]
    check = sqlite3.connect(ledger_file())
    try:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        names = {r[0] for r in check.execute("SELECT name FROM machines")}
    finally:
        check.close()
    expected = set(written) | set(cli_names) | set(killed)
    assert killed and expected - names == set()


def test_short_ledgers_share_the_process_connection_and_close_it_last(tmp_path: Path) -> None:
    window = Ledger(tmp_path / "l.sqlite3")
    with Ledger(tmp_path / "l.sqlite3") as short:
        assert short._db is window._db  # one connection: no second set of locks to drop
    window.add(_own("after the short one closed"))  # still open
    window.close()
    window.close()  # twice is harmless
    again = Ledger(tmp_path / "l.sqlite3")
    assert [m.name for m in again.machines()] == ["after the short one closed"]
    assert oct(os.stat(tmp_path / "l.sqlite3").st_mode & 0o777) == oct(0o600)
    again.close()
