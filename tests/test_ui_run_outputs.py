"""The Run page's bucket panel (issue 22): a run's checkpoints and outputs with sizes and
flags, Download with its cost asked first, progress to 100 % and Cancel that keeps no half
file, Delete that asks first, and a refusal that names the denied action. Against moto's
S3 server and the COS stand-in; keys in the keyring; buttons clicked."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_aws import aws  # noqa: E402, F401
from fixtures_aws import moto_server  # noqa: E402, F401
from fixtures_keyring import memory_keyring  # noqa: E402, F401
from fixtures_storage import StoreEnv  # noqa: E402, F401
from fixtures_storage import cos_server  # noqa: E402, F401
from fixtures_storage import oss_server  # noqa: E402, F401
from fixtures_storage import store_env  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QFileDialog  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402
from PySide6.QtWidgets import QTreeWidgetItem  # noqa: E402

from gpudesk.services.cloud.credentials import save_credentials  # noqa: E402
from gpudesk.services.core.window_state import update_state  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.runs import detached as runs  # noqa: E402
from gpudesk.services.storage import buckets  # noqa: E402
from gpudesk.services.storage.clients import ENDPOINT_ENV  # noqa: E402
from gpudesk.services.storage.uri import StoreUri  # noqa: E402
from gpudesk.ui.run.run_outputs import BAR_STEPS  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402

WAIT_MS = 30_000
MIB = 1024 * 1024
RUN = "proj-20261204-180000-ab12"
S3_AND_COS = pytest.mark.parametrize("store_env", ["aws", "tencent"], indirect=True)
# moto (5.2) does not check ListObjectsV2 against IAM; it does check GetObject (the
# manifest read that follows the listing)
DENIED_LIST = {"aws": "s3:GetObject", "tencent": "cos:GetBucket"}


def seed(client: Any, store: StoreUri, run: str = RUN, big: int = 0) -> dict[str, bytes]:
    """What the agent leaves (uploader.py's layout): checkpoints, then manifest.json last
    naming the complete ones; a third checkpoint cut off; log parts; outputs at the end."""
    paths = store.run(run)
    ckpts = {"ckpt-000000100.pt": b"a" * 1000, "ckpt-000000200.pt": b"b" * 2000,
             "ckpt-000000300.pt": b"c" * 300}
    outs = {"model.pt": bytes(range(256)) * 4 * 700, "eval/metrics.json": b'{"loss": 0.5}'}
    if big:
        outs["big.bin"] = bytes(range(256)) * (big // 256)
    for name, data in ckpts.items():
        client.put_object(Bucket=store.bucket, Key=paths.checkpoint(name), Body=data)
    client.put_object(Bucket=store.bucket, Key=paths.log("log.000001"), Body=b"step 1\n")
    for name, data in outs.items():
        client.put_object(Bucket=store.bucket, Key=paths.output(name), Body=data)
    manifest = {"run": run, "latest": "ckpt-000000200.pt", "updated": "2026-12-04T18:00:00Z",
                "checkpoints": [{"name": n, "bytes": len(ckpts[n]), "complete": True,
                                 "sha256": hashlib.sha256(ckpts[n]).hexdigest()}
                                for n in ("ckpt-000000100.pt", "ckpt-000000200.pt")]}
    client.put_object(Bucket=store.bucket, Key=paths.manifest, Body=json.dumps(manifest).encode())
    return outs


def bucket_of(env: StoreEnv) -> tuple[Any, StoreUri]:
    client = env.client()
    return client, buckets.ensure_bucket(client, env.target(), env.memory).store


def record_run(env: StoreEnv, store: StoreUri, run: str = RUN) -> runs.RunRecord:
    """The run as the app saves it (store fields filled at start), chosen when the page
    was last closed: a new Run page shows it again."""
    record = runs.RunRecord(id=run, project="/p", remote_project="/p", script="train.py",
                            args=[], nproc=1, created=1.0, store_uri=str(store),
                            store_region=env.region, store_credentials="role",
                            store_role="gpudesk-run",
                            nodes=[runs.NodeRun("ssh://x@127.0.0.1:1", None, f"/r/{run}")])
    record.save()
    update_state(run_selected=run)
    return record


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


def open_page(qtbot: Any, ledger: Ledger) -> RunPage:
    page = RunPage(ledger)
    qtbot.addWidget(page)
    page.resize(1200, 800)
    page.show()
    return page


def rows(page: RunPage) -> dict[str, list[tuple[str, str, str]]]:
    tree = page.outputs.tree
    found: dict[str, list[tuple[str, str, str]]] = {}
    for i in range(tree.topLevelItemCount()):
        top: QTreeWidgetItem = tree.topLevelItem(i)
        found[top.text(0)] = [(top.child(j).text(0), top.child(j).text(1), top.child(j).text(2))
                              for j in range(top.childCount())]
    return found


def listed(qtbot: Any, page: RunPage) -> None:
    qtbot.waitUntil(lambda: page.outputs.tree.topLevelItemCount() > 0
                    and not page.outputs.list_runner.busy, timeout=WAIT_MS)


def yes(box: QMessageBox | None, name: str) -> None:
    assert box is not None and box.isVisible()
    button = box.findChild(QPushButton, name)
    assert button is not None
    button.click()


def choose_folder(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *_a, **_k: str(folder)))


@S3_AND_COS
def test_lists_download_with_the_cost_first_and_delete_asks(
        qtbot, loop, store_env: StoreEnv, memory_keyring, ledger: Ledger,  # noqa: F811
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    client, store = bucket_of(store_env)
    outs = seed(client, store)
    seed(client, store, run="neighbour-run")  # another run in the same bucket
    save_credentials(store_env.creds)
    record_run(store_env, store)
    page = open_page(qtbot, ledger)
    panel = page.outputs
    listed(qtbot, page)

    got = rows(page)
    assert got["Checkpoints (3)"] == [
        ("ckpt-000000100.pt", "1,000 B", "complete"),
        ("ckpt-000000200.pt", "2.0 KiB", "complete, latest"),
        ("ckpt-000000300.pt", "300 B", "incomplete (upload cut off; never resumed from)")]
    assert sorted(got["Outputs (2)"]) == [("eval/metrics.json", "13 B", ""),
                                          ("model.pt", "700.0 KiB", "")]
    summary = panel.summary.text()
    assert f"{store.scheme}://{store.bucket}/runs/{RUN}/" in summary
    assert "no published price known for " in summary  # none was read for storage: no guess
    assert " USD a month" not in summary
    assert panel.download_button.isEnabled() and panel.delete_button.isEnabled()

    # Download: the folder, then the size and the data-out cost before anything moves
    dest = tmp_path / "down"
    dest.mkdir()
    choose_folder(monkeypatch, dest)
    qtbot.mouseClick(panel.download_button, Qt.MouseButton.LeftButton)
    box = panel.last_box
    assert box is not None and box.isVisible()
    size = sum(len(v) for v in outs.values())
    assert "Download 2 file(s), 700.0 KiB" in box.text() and str(dest) in box.text()
    if store_env.cloud == "aws":  # the AWS Price List's data-out rate, with source and date
        assert "about 0.0001 USD (AWS Price List" in box.text() and "2025-06-01" in box.text()
    else:
        assert "no published price for Tencent Cloud in ap-guangzhou" in box.text()
    assert list(dest.iterdir()) == []  # nothing started before the answer
    yes(box, "outputsDownloadYes")
    qtbot.waitUntil(lambda: not panel.download_runner.busy and "are in" in
                    panel.message.text(), timeout=WAIT_MS)
    assert panel.bar.value() == BAR_STEPS and panel.bar.text().startswith("100 %")
    assert f"{size / 1024:,.1f} KiB of {size / 1024:,.1f} KiB" in panel.bar.text()
    assert str(dest) in panel.message.text() and panel.open_button.isVisible()
    for name, data in outs.items():
        assert (dest / name).read_bytes() == data
    assert list(dest.rglob("*.part")) == []

    # Delete: asks, names what goes and that it cannot be undone; Cancel keeps everything
    before = store_env.object_keys(store.bucket)
    qtbot.mouseClick(panel.delete_button, Qt.MouseButton.LeftButton)
    box = panel.last_box
    assert box is not None and box.isVisible()
    assert f"run {RUN}" in box.text() and "3 checkpoint(s), 2 output file(s) and 1 log " \
        "part(s)" in box.text() and "cannot be undone" in box.text()
    cancel = box.button(QMessageBox.StandardButton.Cancel)
    assert box.defaultButton() is cancel
    cancel.click()
    assert store_env.object_keys(store.bucket) == before
    qtbot.mouseClick(panel.delete_button, Qt.MouseButton.LeftButton)
    yes(panel.last_box, "outputsDeleteYes")
    qtbot.waitUntil(lambda: "Deleted 7 object(s)" in panel.message.text()
                    and not panel.list_runner.busy and not panel.delete_runner.busy,
                    timeout=WAIT_MS)
    keys = store_env.object_keys(store.bucket)
    assert keys and all(k.startswith("runs/neighbour-run/") for k in keys)
    assert rows(page)["Checkpoints (0)"] == [] and rows(page)["Outputs (0)"] == []
    assert not panel.delete_button.isEnabled() and not panel.download_button.isEnabled()
    page.shutdown()


class StallRelay:
    """A TCP relay in front of moto that holds an answer after ``after`` bytes until
    ``release`` is set: a download is then surely midway when the test clicks Cancel."""

    def __init__(self, upstream: tuple[str, int], after: int) -> None:
        self.upstream, self.after = upstream, after
        self.release, self.stalled = threading.Event(), threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.sockets: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            self.sockets += [client, up]
            threading.Thread(target=self._pump, args=(client, up, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, answer: bool) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                if answer and not self.release.is_set() and sent + len(data) > self.after:
                    keep = max(self.after - sent, 0)
                    dst.sendall(data[:keep])
                    sent, data = sent + keep, data[keep:]
                    self.stalled.set()
                    self.release.wait(WAIT_MS / 1000)
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.release.set()
        self.server.close()
        for s in self.sockets:
            s.close()


@pytest.mark.parametrize("store_env", ["aws"], indirect=True)
def test_cancel_midway_keeps_no_file_under_its_final_name(
        qtbot, loop, store_env: StoreEnv, memory_keyring, ledger: Ledger,  # noqa: F811
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    client, store = bucket_of(store_env)
    seed(client, store, big=6 * MIB)
    assert store_env.moto is not None
    host, port = store_env.moto.endpoint.removeprefix("http://").split(":")
    relay = StallRelay((host, int(port)), after=int(2.5 * MIB))
    monkeypatch.setenv(ENDPOINT_ENV, relay.url)
    save_credentials(store_env.creds)
    record_run(store_env, store)
    page = open_page(qtbot, ledger)
    panel = page.outputs
    try:
        listed(qtbot, page)
        dest = tmp_path / "down"
        dest.mkdir()
        choose_folder(monkeypatch, dest)
        qtbot.mouseClick(panel.download_button, Qt.MouseButton.LeftButton)
        yes(panel.last_box, "outputsDownloadYes")
        qtbot.waitUntil(lambda: relay.stalled.is_set() and 0 < panel.bar.value() < BAR_STEPS,
                        timeout=WAIT_MS)
        assert panel.cancel_button.isVisible() and panel.cancel_button.isEnabled()
        assert not panel.delete_button.isEnabled()  # nothing deleted under a download
        assert list(dest.rglob("*.part"))  # midway: a file is being fetched
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
        relay.release.set()
        qtbot.waitUntil(lambda: not panel.download_runner.busy, timeout=WAIT_MS)
    finally:
        relay.close()
    assert "Download cancelled" in panel.message.text()
    names = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert "big.bin" not in names and not any(n.endswith(".part") for n in names)
    assert panel.bar.value() < BAR_STEPS
    page.shutdown()


@pytest.mark.parametrize("store_env", ["tencent"], indirect=True)
def test_a_cut_download_says_what_failed_and_keeps_no_half_file(
        qtbot, loop, store_env: StoreEnv, memory_keyring, ledger: Ledger,  # noqa: F811
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    client, store = bucket_of(store_env)
    big = bytes(range(256)) * (3 * MIB // 256)
    client.put_object(Bucket=store.bucket, Key=store.run(RUN).output("w.bin"), Body=big)
    save_credentials(store_env.creds)
    record_run(store_env, store)
    page = open_page(qtbot, ledger)
    panel = page.outputs
    listed(qtbot, page)
    dest = tmp_path / "down"
    dest.mkdir()
    choose_folder(monkeypatch, dest)
    assert store_env.standin is not None
    store_env.standin.cut_next_get = MIB + 5
    qtbot.mouseClick(panel.download_button, Qt.MouseButton.LeftButton)
    yes(panel.last_box, "outputsDownloadYes")
    qtbot.waitUntil(lambda: not panel.download_runner.busy, timeout=WAIT_MS)
    text = panel.message.text()
    assert text.startswith("The download stopped: ") and "w.bin" in text, text
    assert list(dest.iterdir()) == []
    page.shutdown()


@S3_AND_COS
def test_a_refusal_names_the_denied_action(
        qtbot, loop, store_env: StoreEnv, memory_keyring, ledger: Ledger) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    client, store = bucket_of(store_env)
    seed(client, store)
    action = DENIED_LIST[store_env.cloud]
    creds, enforce = store_env.denied(action)
    save_credentials(creds)
    record_run(store_env, store)
    with enforce():
        page = open_page(qtbot, ledger)
        panel = page.outputs
        qtbot.waitUntil(lambda: "could not be read" in panel.message.text(), timeout=WAIT_MS)
    text = panel.message.text()
    assert f"{action} was denied" in text and f"Allow {action}" in text, text
    assert panel.tree.topLevelItemCount() == 0 and not panel.download_button.isEnabled()
    page.shutdown()


def test_a_run_without_a_bucket_says_where_its_checkpoints_are(
        qtbot, loop, ledger: Ledger, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    record = runs.RunRecord(id="plain-run", project="/p", remote_project="/p", script="t.py",
                            args=[], nproc=1, created=1.0,
                            nodes=[runs.NodeRun("ssh://x@127.0.0.1:1", None, "/r/plain")])
    record.save()
    update_state(run_selected=record.id)
    page = open_page(qtbot, ledger)
    text = page.outputs.summary.text()
    assert "has no bucket" in text and "on the machine and copied to this laptop only" in text
    assert not page.outputs.refresh_button.isEnabled()
    assert not page.outputs.download_button.isEnabled()
    assert not page.outputs.delete_button.isEnabled()
    page.shutdown()
