"""Start the real app the way a user does (``python -m gpudesk``) and let it quit itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# `-X importtime` writes one line per imported module: "import time: self | cumulative | name".
_IMPORT_LINE = re.compile(r"^import time:\s*\d+\s*\|\s*\d+\s*\|\s*(?P<name>\S+)\s*$", re.M)


def test_gui_starts_shows_window_and_quits(gpudesk_home: Path) -> None:
    env = dict(os.environ)
    env.update(
        GPUDESK_HOME=str(gpudesk_home),
        GPUDESK_QUIT_AFTER_MS="300",
        GPUDESK_REPORT_SHOWN="1",
        QT_QPA_PLATFORM=env.get("QT_QPA_PLATFORM", "offscreen"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpudesk"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    tail = result.stderr[-4000:]
    assert result.returncode == 0, tail
    shown = re.search(r"^shown-at (\d+\.\d+)$", result.stderr, re.M)
    assert shown, "window never shown:\n" + tail
    ready = re.search(r"^ready-at (\d+\.\d+)$", result.stderr, re.M)
    assert ready and float(ready.group(1)) >= float(shown.group(1)), "pages never made:\n" + tail
    # the OS colour scheme is remembered for the next start's first paint
    saved = json.loads((gpudesk_home / "config" / "settings.json").read_text(encoding="utf-8"))
    assert saved["system_scheme_seen"] in ("light", "dark")

    modules = {m.group("name").strip() for m in _IMPORT_LINE.finditer(result.stderr)}
    # The import log must be real, or the torch check below would pass vacuously.
    assert {"gpudesk.app", "PySide6.QtWidgets", "qasync"} <= modules
    torch_modules = sorted(m for m in modules if m == "torch" or m.startswith("torch."))
    assert torch_modules == [], "starting the window must not import torch"
    # what the Plan page does not need waits for its first use (issue 31, a fast start)
    before_ready = result.stderr[:ready.start()]
    early = {m.group("name").strip() for m in _IMPORT_LINE.finditer(before_ready)}
    assert "gpudesk.ui.plan.plan_page" in early  # the Plan page is made before ready
    late = {"boto3", "paramiko", "pyqtgraph", "urllib.request",
            "gpudesk.services.cloud.launcher"} & early
    assert late == set(), f"imported before the window was ready: {sorted(late)}"
    # what works behind the first screen starts right after it, and does start
    behind = {"gpudesk.ui.machines.instances_page", "gpudesk.ui.watch.budget_alerts",
              "gpudesk.services.money.ledger", "gpudesk.ui.widgets.tray"}
    assert behind & early == set(), f"made before the first screen: {sorted(behind & early)}"
    started = re.search(r"^started-at (\d+\.\d+)$", result.stderr, re.M)
    assert started and started.start() > ready.start(), "the background never started:\n" + tail
    by_started = {m.group("name").strip()
                  for m in _IMPORT_LINE.finditer(result.stderr[:started.start()])}
    assert behind <= by_started

    log_file = gpudesk_home / "log" / "gpudesk.log"
    assert "starting" in log_file.read_text(encoding="utf-8")
