"""Regenerate the screenshots in docs/ (run under Xvfb: ``xvfb-run -s '-screen 0 1280x800x24'``).

Writes screenshot-<page>-<language>-<theme>.png for the pages plan, accounts,
instances, run, watch and data and the preferences, welcome and launch dialogs, in en
and zh_CN, light and dark (36 files; older ones are removed first). Settings and
a sample ledger go to a temporary GPUDESK_HOME. The zh_CN shots need a CJK font
(Debian: ``apt-get install fonts-noto-cjk``); without one Qt draws empty boxes, so
this refuses to run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def main() -> int:
    os.environ["GPUDESK_HOME"] = tempfile.mkdtemp(prefix="gpudesk-shots-")
    from PySide6.QtWidgets import QApplication

    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.shell.i18n import install_translator
    from gpudesk.ui.shell.main_window import MainWindow
    from gpudesk.ui.shell.theme import apply_theme

    app = QApplication(sys.argv)
    from PySide6.QtGui import QFontDatabase

    if not any("CJK" in f or "Noto Sans SC" in f for f in QFontDatabase.families()):
        print("no CJK font: install fonts-noto-cjk (zh_CN would show empty boxes)")
        return 1

    def settle() -> None:
        for _ in range(20):
            app.processEvents()

    catalog = load_catalog()
    ledger = sample_ledger()
    pages = ("plan", "accounts", "instances", "run", "watch", "data", "preferences",
             "welcome", "launch")  # others' shots (screenshot_spot_history.py) are theirs to keep
    for old in DOCS.glob("screenshot-*.png"):
        parts = old.stem.split("-")  # screenshot-<page>-<language>-<theme>
        if len(parts) == 4 and parts[1] in pages and parts[2] in ("en", "zh_CN"):
            old.unlink()
    for language in ("en", "zh_CN"):
        install_translator(app, language)
        window = MainWindow(Settings(language=language, welcomed=True), catalog, ledger=ledger)
        window.resize(1280, 800)
        window.show()
        for theme in ("light", "dark"):
            apply_theme(app, theme)
            settle()
            shoot_all(window, catalog, settle, f"{language}-{theme}")
        window.close()
        settle()
    return 0


def shoot_all(window, catalog, settle, tag: str) -> None:  # type: ignore[no-untyped-def]
    """Every page and dialog, as ``screenshot-<page>-<language>-<theme>.png``."""
    window.show_page("plan")
    settle()
    window.grab().save(str(DOCS / f"screenshot-plan-{tag}.png"))
    prefs = window.show_preferences()
    settle()
    prefs.adjustSize()
    settle()
    prefs.grab().save(str(DOCS / f"screenshot-preferences-{tag}.png"))
    prefs.reject()
    window.settings.welcomed = False
    welcome = window.maybe_show_welcome()
    assert welcome is not None
    settle()
    welcome.adjustSize()
    settle()
    welcome.grab().save(str(DOCS / f"screenshot-welcome-{tag}.png"))
    welcome.finished.disconnect()  # do not save settings from the screenshot run
    welcome.reject()
    for key in ("accounts", "instances"):
        window.show_page(key)
        window.instances.reload()
        window.instances.table.selectRow(0)
        settle()
        window.grab().save(str(DOCS / f"screenshot-{key}-{tag}.png"))
    shoot_launch(window, catalog, settle, tag)
    shoot_run(window, settle, tag)
    shoot_watch(window, settle, tag)
    shoot_data(window, settle, tag)


def sample_ledger():  # type: ignore[no-untyped-def]
    """Three machines as a researcher might have them: running, stopped, their own."""
    import time

    from gpudesk.services.money.ledger import Account
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.money.ledger import Machine

    ledger = Ledger()
    now = time.time()
    ledger.save_account(Account("aws", "AKIA…7Q2X", "123456789012", "arn:aws:iam::123456789012"
                                ":user/alice", True, now - 3600))
    ledger.add(Machine(id="m-3f9a1c20b7", provider="aws", region="us-east-1",
                       zone="us-east-1b", instance_type="g5.xlarge", gpu="A10G", gpus=1,
                       market="spot", price_per_hour=0.43, cloud_id="i-0a1b2c3d4e5f60718",
                       state="running", public_ip="54.210.7.19", ssh_user="ubuntu",
                       name="m-3f9a1c20b7", running_since=now - 2 * 3600 - 840,
                       group_id="gpudesk-run-m-3f9a1c20b7", group_state="live"),
               step="instance", detail="i-07e5d4c3b2a190817 running")
    # kept alive by its group: the first spot machine was reclaimed and replaced
    ledger.log("m-3f9a1c20b7", "reclaimed", "i-07e5d4c3b2a190817")
    ledger.log("m-3f9a1c20b7", "replaced", "i-07e5d4c3b2a190817 -> i-0a1b2c3d4e5f60718")
    ledger.add(Machine(id="m-77c2e0d915", provider="tencent", region="ap-guangzhou",
                       zone="ap-guangzhou-3", instance_type="GN7.2XLARGE32", gpu="T4", gpus=1,
                       price_per_hour=1.209, cloud_id="ins-8k2j4h1q", state="stopped",
                       public_ip="", name="m-77c2e0d915", billed_seconds=5400))
    ledger.add(Machine(id="m-0d4b6e8a21", provider="own", name="lab-4090", public_ip="10.8.0.12",
                       ssh_user="alice", gpus=2, gpu="RTX 4090", state="ready", origin="added"))
    return ledger


def shoot_launch(window, catalog, settle, tag: str) -> None:  # type: ignore[no-untyped-def]
    """The Launch dialog part-way through, as the progress view shows it."""
    from gpudesk.services.cloud.launcher import Progress
    from gpudesk.ui.machines.launch_dialog import LaunchDialog

    offer = next(o for o in catalog.offers
                 if o.instance_type == "g5.xlarge" and o.region == "us-east-1")

    async def never(_plan, _report):  # type: ignore[no-untyped-def]
        raise RuntimeError

    dialog = LaunchDialog(offer, catalog, never, spot=True, money=window.money, detect=False,
                          parent=window)
    dialog.allow_from.setText("203.0.113.7/32")
    dialog.keep_alive.setChecked(True)
    dialog.budget.setValue(40.0)
    for step, status in (("key", "done"), ("security-group", "done"), ("instance", "done"),
                         ("running", "started")):
        dialog.on_progress(Progress(step, status, ledger_id="m-3f9a1c20b7"))  # type: ignore[arg-type]
    dialog.show()
    settle()
    dialog.adjustSize()
    settle()
    dialog.grab().save(str(DOCS / f"screenshot-launch-{tag}.png"))
    dialog.close()


SAMPLE_LOG = """\
gpudesk: synced 14 changed files (0 unchanged) to ubuntu@54.210.7.19:22
gpudesk: started run vit-cifar-20261203-101502-4c1e on ubuntu@54.210.7.19:22 (pid 4127)
[default0]:[gpudesk] 1 process(es), backend nccl, device cuda:0, amp bf16
[default0]:[gpudesk] no checkpoint in /home/ubuntu/gpudesk/runs/vit-cifar/checkpoints
[default0]:[gpudesk] step 100/3000  loss 2.114  41.7 steps/s
[default0]:[gpudesk] step 200/3000  loss 1.862  42.0 steps/s
[default0]:[gpudesk] checkpoint (interval) at step 250: ckpt-000000250.pt
[default0]:[gpudesk] step 300/3000  loss 1.655  41.9 steps/s
[default0]:[gpudesk] step 400/3000  loss 1.503  41.8 steps/s
"""


def shoot_run(window, settle, tag: str) -> None:  # type: ignore[no-untyped-def]
    """The Run page following a run, with a search in its log."""
    import time

    from gpudesk.services.runs.detached import NodeRun
    from gpudesk.services.runs.detached import RunRecord
    from gpudesk.services.runs.detached import RunStatus

    RunRecord(id="vit-cifar-20261203-101502-4c1e", project="/home/alice/vit-cifar",
              remote_project="/home/ubuntu/gpudesk/projects/vit-cifar-1a2b3c4d",
              script="train.py", args=["--epochs", "30"], nproc=1, amp="bf16",
              checkpoint_every_min=15, created=time.time(),
              nodes=[NodeRun("m-3f9a1c20b7", None, "/home/ubuntu/gpudesk/runs/vit-cifar",
                             "54.210.7.19")]).save()
    page = window.run
    page.reload_machines()
    page.reload_runs()
    # the run's machines (its machine is kept alive by its group); following it would
    # reach for the sample address, so only this panel is shown for it
    from gpudesk.services.runs.run_story import story

    record = RunRecord.load("vit-cifar-20261203-101502-4c1e")
    page.machines_view.show_run(record)
    settle()  # its deferred refresh starts a read no event loop here finishes:
    page.machines_view.runner.cancel()  # read it in this thread instead
    page.machines_view._told(record, story(record))
    page.project.setText("/home/alice/vit-cifar")
    page.args.setText("--epochs 30")
    page.amp.setCurrentIndex(2)
    page.checkpoint.setValue(15)
    page.log.setPlainText(SAMPLE_LOG)
    page.last_status = RunStatus("running", pid=4127)
    page._refresh()  # the state label, the list item's state and the buttons
    page.search.setText("checkpoint")
    window.show_page("run")
    settle()
    window.grab().save(str(DOCS / f"screenshot-run-{tag}.png"))


def shoot_data(window, settle, tag: str) -> None:  # type: ignore[no-untyped-def]
    """The Data page with three datasets in two buckets and a push under way (drawn from
    samples: no bucket is asked)."""
    from PySide6.QtCore import QCoreApplication

    from gpudesk.services.core.paths import cache_dir
    from gpudesk.services.storage import datasets
    from gpudesk.services.storage import s3_price_list
    from gpudesk.services.storage.uri import parse_uri
    from gpudesk.ui.data.data_work import Shown

    # a sample price cache, as Tools → Refresh prices leaves it (S3 Standard, us-east-1)
    s3_price_list.save(cache_dir(), s3_price_list.S3Prices(
        "us-east-1", "2025-06-01", s3_price_list.offer_url("us-east-1"), 1.75e9, 0.023))
    window.show_page("data")
    page = window.data
    settle()
    page.list_runner.cancel()
    s3, cos = parse_uri("s3://alice-lab-data/gpudesk"), parse_uri("cos://lab-1250000000/sets")

    def sample(name, store, region, n, size, source, sha):  # type: ignore[no-untyped-def]
        files = tuple(datasets.DataFile(f"f{i}", size // n, "0" * 64) for i in range(n))
        return datasets.Dataset(name, store, region, files, source, "2026-12-06T08:00:00Z",
                                sha.ljust(64, "0"))

    found = [sample("cifar10", s3, "us-east-1", 60002, 178_000_000,
                    "alice-laptop:/home/alice/data/cifar10", "3f9a1c20b7d4"),
             sample("imagenet-val", s3, "us-east-1", 50000, 6_700_000_000,
                    "alice-laptop:/home/alice/data/imagenet/val", "a1b2c3d4e5f6"),
             sample("wikitext-103", cos, "ap-shanghai", 3, 540_000_000,
                    "alice-laptop:/data/wikitext", "77aa88bb99cc")]
    page._listed([(str(s3), "us-east-1"), (str(cos), "ap-shanghai")], found)
    box = page.push_box
    box.folder.setText("/home/alice/data/coco-2017")
    box.name.setText("coco-2017")
    box.store.setEditText(str(s3))
    box.region.setText("us-east-1")
    box.show_progress(Shown(19_300_000_000, 7_950_000_000, 48_120, 1_204, 61_000_000, 186.0))
    box.bar.setVisible(True)  # as while a push runs
    box.push_button.setEnabled(False)
    box.cancel_button.setEnabled(True)
    box.message.setText(QCoreApplication.translate("DataPage", "Pushing…"))
    settle()
    window.grab().save(str(DOCS / f"screenshot-data-{tag}.png"))


def shoot_watch(window, settle, tag: str) -> None:  # type: ignore[no-untyped-def]
    """The Watch page with 20 minutes of a 2-GPU machine at 1 Hz and its spend."""
    import math
    import time

    from gpudesk.ui.watch.dashboard_page import DashboardPage

    page = window.watch
    dash = page.dashboards.get("m-3f9a1c20b7")
    if dash is None:
        dash = DashboardPage("m-3f9a1c20b7", "m-3f9a1c20b7", page)
        page.dashboards[dash.key] = dash
        page.stack.addWidget(dash)
        page.overview.watch(dash)
    now = time.time()
    records = []
    for i in range(1200):
        t = now - 1200 + i
        gpus = [{"index": g, "uuid": f"GPU-{g}", "name": "NVIDIA A10G",
                 "util": 92 + 6 * math.sin(i / 40 + g) if i > 90 else 3,
                 "mem_used_mib": 17800 + 300 * g if i > 90 else 400, "mem_total_mib": 23028,
                 "temp_c": 58 + 8 * (1 - math.exp(-i / 300)) + g, "power_w": 180 + 20 * g,
                 "power_limit_w": 300} for g in range(2)]
        procs = [{"pid": 4127 + g, "gpu_uuid": f"GPU-{g}", "gpu_index": g,
                  "name": "python3", "mem_used_mib": 17400 + 300 * g} for g in range(2)]
        records.append({"seq": i + 1, "t": t, "src": "nvidia-smi", "gpus": gpus,
                        "procs": procs})
    dash.feed_many(records)
    start = now - 2 * 3600 - 840
    dash.set_spend([(start + k * 60, 0.86 * k / 60) for k in range(0, 135)], 0.86, "USD",
                   5.0, now + 3 * 3600)
    page.show_machine(dash.key)
    window.show_page("watch")
    for _ in range(5):
        settle()
        dash.redraw()
    window.grab().save(str(DOCS / f"screenshot-watch-{tag}.png"))


if __name__ == "__main__":
    sys.exit(main())
