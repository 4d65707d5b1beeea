"""Kill gpudesk (SIGKILL) at every step of a launch; after a restart nothing billing is unseen.

Each run is a real ``gpudesk launch`` process against the Tencent stand-in,
with its keys in the real Secret Service (scripts/test.sh provides one). The
restart is ``gpudesk ls --json`` (which reconciles) and the Instances page.
Also: a whole session through the CLI, then every file gpudesk wrote is
scanned for the secret.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures_keyring import secret_service  # noqa: F401
from fixtures_tencent import SECRET_ID, SECRET_KEY, tencent, tencent_creds, tencent_server  # noqa: F401
from PySide6.QtCore import QCoreApplication, QEvent

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import FAULT_ENV, FAULT_POINTS
from gpudesk.services.money.ledger import Ledger

# "ssh" is never reached with --no-wait-ssh; the stand-in's addresses lead nowhere,
# and tests only talk to 127.0.0.1. The other points cover every ledger write.
KILL_POINTS = [p for p in FAULT_POINTS if p != "ssh"]
LAUNCH = ["launch", "--provider", "tencent", "--type", "GN7.2XLARGE32", "--region",
          "ap-guangzhou", "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01"]


def gpudesk(args: list[str], env: dict[str, str], stdin: str = ""
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudesk", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def env(tencent, gpudesk_home: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]  # noqa: F811
    out = dict(os.environ)
    out.update({TENCENT_ENDPOINT_ENV: f"http://{tencent.endpoint}", "GPUDESK_HOME":
                str(gpudesk_home), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    out.pop(FAULT_ENV, None)
    return out


def listed(env: dict[str, str]) -> list[dict[str, Any]]:
    done = gpudesk(["ls", "--json", "--all"], env)
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


@pytest.mark.parametrize("point", KILL_POINTS)
def test_killed_launch_is_found_after_restart(point, tencent, tencent_creds, secret_service,  # type: ignore[no-untyped-def]  # noqa: F811
                                             env, qtbot) -> None:
    credentials.save_credentials(tencent_creds)
    with Ledger() as ledger:  # the app had these keys set up
        from gpudesk.services.money.ledger import Account

        ledger.save_account(Account("tencent", "AKID…abcd"))
    killed = gpudesk(LAUNCH, {**env, FAULT_ENV: point})
    assert killed.returncode == -9, (point, killed.stderr)
    at_cloud = {i["InstanceId"] for i in tencent.state.instances.values()}
    expected = 0 if point in ("intent", "key", "security-group", "image") else 1
    assert len(at_cloud) == expected, point

    rows = listed(env)
    by_cloud = {r["cloud_id"]: r for r in rows if r["cloud_id"]}
    assert at_cloud <= set(by_cloud), (point, rows)
    for cloud_id in at_cloud:
        assert by_cloud[cloud_id]["billing"] is True
    assert len(rows) == 1  # the intent row and the instance are one machine, not two

    # ...and on screen, in the restarted window's Instances page.
    from gpudesk.services.core.settings import load_settings
    from gpudesk.ui.shell.main_window import MainWindow

    with Ledger() as ledger:
        window = MainWindow(load_settings(), ledger=ledger)
        shown = {window.instances.model.machine(r).cloud_id  # type: ignore[union-attr]
                 for r in range(window.instances.model.rowCount())}
        assert at_cloud <= shown
        if at_cloud:
            assert "1" in window.billing_label.text()
        # Delete the window before the ledger closes: a later language change must
        # not reach pages whose ledger is gone.
        window.close()
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def test_whole_session_leaves_no_secret_in_any_file(tencent, secret_service, env,  # type: ignore[no-untyped-def]  # noqa: F811
                                                    gpudesk_home: Path) -> None:
    steps = [
        (["accounts", "add", "tencent", "--secret-id", SECRET_ID, "--secret-stdin"],
         SECRET_KEY + "\n"),
        (["accounts", "verify", "tencent"], ""),
        (["accounts", "list", "--json"], ""),
        (LAUNCH + ["--json"], ""),
        (["ls", "--json"], ""),
    ]
    outputs = []
    launched = ""
    for args, stdin in steps:
        done = gpudesk(args, env, stdin)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout + done.stderr)
        assert SECRET_KEY not in " ".join(args)
        launched = done.stdout if args[0] == "launch" else launched
    machine = json.loads(launched)
    done = gpudesk(["terminate", machine["id"], "--yes"], env)
    assert done.returncode == 0, done.stderr
    outputs.append(done.stdout + done.stderr)
    # A wrong secret is refused with a clear answer, and changes nothing stored.
    bad = gpudesk(["accounts", "add", "tencent", "--secret-id", SECRET_ID, "--secret-stdin"],
                  env, "wrong-secret-value-1234567890abcd\n")
    assert bad.returncode == 1 and "rejected the keys" in bad.stderr
    assert credentials.load_credentials("tencent").secret == SECRET_KEY  # type: ignore[union-attr]

    files = [p for p in gpudesk_home.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite3" for p in files) and any(p.suffix == ".log" for p in files)
    for path in files:
        data = path.read_bytes()
        assert SECRET_KEY.encode() not in data, path
        assert b"wrong-secret-value" not in data, path
    for text in outputs + [bad.stdout, bad.stderr]:
        assert SECRET_KEY not in text
    # The machine was terminated and the ledger says so.
    rows = {r["id"]: r for r in listed(env)}
    assert rows[machine["id"]]["state"] in ("terminated", "gone")
    assert rows[machine["id"]]["billing"] is False
