"""Watch shows what the agent has put in the run's bucket (issue 22): the last upload and the
latest checkpoint from the run folder's ``store.json``, or that the machine cannot reach the
bucket while the laptop copies go on. Real loopback sshd and agent; ``store.json`` written
by the agent's own uploader against moto's S3 server (and against a closed port)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_agent_store import Bucket  # noqa: E402, F401
from fixtures_agent_store import aws  # noqa: E402, F401
from fixtures_agent_store import bucket  # noqa: E402, F401
from fixtures_agent_store import moto_server  # noqa: E402, F401
from fixtures_agent_store import write_fake_checkpoint  # noqa: E402, F401
from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_telemetry import Roots  # noqa: E402, F401
from fixtures_telemetry import roots  # noqa: E402, F401
from test_ui_watch_agent import ledger  # noqa: E402, F401
from test_ui_watch_agent import own  # noqa: E402, F401
from test_ui_watch_agent import watch  # noqa: E402, F401

from gpudesk.agent.uploader import Uploader  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.runs import detached as runs  # noqa: E402
from gpudesk.ui.watch.watch_page import WatchPage  # noqa: E402

WAIT_MS = 60_000


def record(run_id: str, ref: str, run_dir: Path, store_uri: str = "") -> runs.RunRecord:
    """The run as the app saves it when it starts on machine ``ref``."""
    rec = runs.RunRecord(id=run_id, project="/p", remote_project="/p", script="train.py",
                         args=[], nproc=1, created=time.time(), store_uri=store_uri,
                         store_region="us-east-1" if store_uri else "",
                         store_credentials="sts" if store_uri else "",
                         nodes=[runs.NodeRun(ref, None, str(run_dir))])
    rec.save()
    return rec


def start_watching(qtbot: Any, page: WatchPage, ref: str) -> None:
    page.machine.setCurrentIndex(page.machine.findData(ref))
    page.connect_button.click()
    qtbot.waitUntil(lambda: page.feeds[ref].site is not None and "live" in page.status.text(),
                    timeout=WAIT_MS)


def test_watch_shows_the_uploads_and_an_unreachable_bucket(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots, bucket: Bucket,  # noqa: F811
        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ref = own(ledger, sshd, roots.new())
    run = bucket.run("r1")  # a run folder with the agent's store config (moto)
    write_fake_checkpoint(run / "checkpoints", 10)
    Uploader.for_run(run).tick(time.time())  # the agent uploads and writes store.json
    record("r1", ref, run, store_uri=f"s3://{bucket.name}/")
    page = watch(qtbot, ledger, tmp_path)
    start_watching(qtbot, page, ref)
    qtbot.waitUntil(lambda: not page.store.isHidden() and "ckpt-000000010.pt" in
                    page.store.text(), timeout=WAIT_MS)
    text = page.store.text()
    assert text.startswith(f"Run r1 → s3://{bucket.name}/runs/r1/: last upload at "), text
    assert "The bucket holds 1 checkpoint(s), the latest ckpt-000000010.pt." in text
    assert "Cannot reach" not in text

    # the machine loses the bucket: the agent records it, the page says so on its next look
    config = json.loads((run / "store-config.json").read_text())
    config["endpoint"] = "http://127.0.0.1:9"
    (run / "store-config.json").write_text(json.dumps(config))
    write_fake_checkpoint(run / "checkpoints", 20)
    Uploader.for_run(run).tick(time.time())
    assert "ckpt-000000010.pt" in page.store.text()  # not read again before the page looks
    page.spend_timer.timeout.emit()  # the page's 30-second timer comes round
    qtbot.waitUntil(lambda: "Cannot reach the bucket" in page.store.text(), timeout=WAIT_MS)
    text = page.store.text()
    assert f"Cannot reach the bucket: {bucket.name} at 127.0.0.1:9" in text, text
    assert text.endswith("Checkpoints are still copied to this laptop."), text
    page.shutdown()


def test_a_run_without_a_bucket_shows_no_upload_state(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots,  # noqa: F811
        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ref = own(ledger, sshd, roots.new())
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "store.json").write_text(json.dumps({"error": "cannot reach the bucket: x"}))
    record("plain-1", ref, folder)  # no store: the file is not this run's business
    page = watch(qtbot, ledger, tmp_path)
    start_watching(qtbot, page, ref)
    page.spend_timer.timeout.emit()
    qtbot.waitUntil(lambda: not page.store_runner.busy, timeout=WAIT_MS)
    assert page.store.isHidden() and page.store.text() == ""
    page.shutdown()
