"""Kill gpudesk (SIGKILL) at every step of a launch; after a restart nothing billing is unseen.

Each run is a real ``gpudesk launch`` process against the Tencent stand-in,
with its keys in the real Secret Service (scripts/test.sh provides one). The
restart is ``gpudesk ls --json`` (which reconciles) and the Instances page.
Also: a whole session through the CLI, then every file gpudesk wrote is
scanned for the secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import launch_fault_harness as harness
import pytest
from fixtures_keyring import secret_service  # noqa: F401
from fixtures_tencent import SECRET_ID  # noqa: F401
from fixtures_tencent import SECRET_KEY  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QEvent

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.money.ledger import Ledger

LAUNCH = harness.launch_args("tencent", "GN7.2XLARGE32", "ap-guangzhou")


@pytest.fixture
def env(tencent, gpudesk_home: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]  # noqa: F811
    return harness.cli_env(TENCENT_ENDPOINT_ENV, tencent.endpoint, gpudesk_home)


@pytest.mark.parametrize("point", harness.KILL_POINTS)
def test_killed_launch_is_found_after_restart(point, tencent, tencent_creds, secret_service,  # type: ignore[no-untyped-def]  # noqa: F811
                                             env, qtbot) -> None:
    credentials.save_credentials(tencent_creds)
    with Ledger() as ledger:  # the app had these keys set up
        from gpudesk.services.money.ledger import Account

        ledger.save_account(Account("tencent", "AKID…abcd"))
    harness.kill_launch_at(point, LAUNCH, env)
    at_cloud = {i["InstanceId"] for i in tencent.state.instances.values()}
    assert len(at_cloud) == harness.machines_expected(point), point

    harness.restart_finds(at_cloud, env, point)

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
    outputs, launched = harness.run_session(steps, env, SECRET_KEY)
    machine = json.loads(launched)
    done = harness.gpudesk(["terminate", machine["id"], "--yes"], env)
    assert done.returncode == 0, done.stderr
    outputs.append(done.stdout + done.stderr)
    # A wrong secret is refused with a clear answer, and changes nothing stored.
    bad = harness.gpudesk(["accounts", "add", "tencent", "--secret-id", SECRET_ID,
                           "--secret-stdin"], env, harness.WRONG_SECRET + "-1234567890abcd\n")
    assert bad.returncode == 1 and "rejected the keys" in bad.stderr
    assert credentials.load_credentials("tencent").secret == SECRET_KEY  # type: ignore[union-attr]

    files = harness.assert_no_secret_left(gpudesk_home, SECRET_KEY,
                                          outputs + [bad.stdout, bad.stderr])
    assert any(p.suffix == ".sqlite3" for p in files) and any(p.suffix == ".log" for p in files)
    # The machine was terminated and the ledger says so.
    rows = {r["id"]: r for r in harness.listed(env)}
    assert rows[machine["id"]]["state"] in ("terminated", "gone")
    assert rows[machine["id"]]["billing"] is False
