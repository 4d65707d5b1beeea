"""One run's machines one after another (issue 23): ``gpudesk show RUN [--json]`` from the
run's bucket (spend.json and machines/*.json as the agents keep them, on moto's S3) and
the ledger's keep-alive row (what the desktop saw)."""
# ruff: noqa: F811 - fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.keep_alive_launch import STEP_RECLAIMED
from gpudesk.services.cloud.keep_alive_launch import STEP_REPLACED
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.run_story import story
from gpudesk.services.storage.clients import ENDPOINT_ENV

RUN = "mnist-20261205-090000-ab12"
T0 = 1_796_300_000.0  # 2026-12-03: before the ledger events of the test run


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _put(bucket: Bucket, key: str, data: Any) -> None:
    bucket.s3.put_object(Bucket=bucket.name, Key=key, Body=json.dumps(data).encode())


@pytest.fixture
def kept_alive(bucket: Bucket, memory_keyring: Any, monkeypatch: pytest.MonkeyPatch
               ) -> tuple[Bucket, RunRecord]:
    """A run on a keep-alive row: i-first reclaimed, i-second resumed from step 1200 and
    running; i-third started by the group a moment ago, before its agent wrote anything."""
    credentials.save_credentials(bucket.moto.credentials)
    monkeypatch.setenv(ENDPOINT_ENV, bucket.moto.endpoint)
    with Ledger() as ledger:
        ledger.add(Machine(id="m-0000000001", provider="aws", region="us-east-1",
                           instance_type="g5.xlarge", market="spot", cloud_id="i-first",
                           state="running", group_id="gpudesk-run-m-0000000001",
                           group_state="live", name="m-0000000001"),
                   step="instance", detail="i-first running")
        ledger.log("m-0000000001", STEP_RECLAIMED, "i-first")
        ledger.log("m-0000000001", STEP_REPLACED, "i-first -> i-second")
        ledger.log("m-0000000001", STEP_REPLACED, "i-second -> i-third")
    record = RunRecord(id=RUN, project="/p", remote_project="/r/p", script="train.py",
                       args=[], nproc=1, nodes=[NodeRun("m-0000000001", None, f"/r/runs/{RUN}")],
                       store_uri=f"s3://{bucket.name}/", store_region="us-east-1",
                       store_credentials="role")
    record.save()
    root = f"runs/{RUN}/"
    _put(bucket, root + "spend.json", {
        "run": RUN, "currency": "USD", "total": 1.35, "updated": T0 + 7200,
        "machines": [
            {"cloud_id": "i-first", "from": T0, "to": T0 + 3600, "why": "reclaimed",
             "seconds": 3600, "price_per_hour": 0.9, "spent": 0.9, "resumed_from_step": None},
            {"cloud_id": "i-second", "from": T0 + 3900, "to": None, "why": "started",
             "seconds": 1800, "price_per_hour": 0.9, "spent": 0.45,
             "resumed_from_step": None}]})
    _put(bucket, root + "machines/i-second.json", {
        "run": RUN, "cloud_id": "i-second", "from": T0 + 3900, "why": "replaced",
        "resumed_from_step": 1200, "checkpoint": "ckpt-000001200.pt"})
    return bucket, record


def test_the_story_joins_the_buckets_spend_and_the_ledgers_members(
        kept_alive: tuple[Bucket, RunRecord]) -> None:
    bucket, record = kept_alive
    told = story(record, client=bucket.s3)
    assert told.group == "gpudesk-run-m-0000000001" and told.bucket_error == ""
    assert [(s.cloud_id, s.why, s.spent, s.resumed_from_step) for s in told.machines][:2] == [
        ("i-first", "reclaimed", 0.9, None), ("i-second", "reclaimed", 0.45, 1200)]
    # the ledger saw i-second replaced by i-third, which the bucket does not name yet
    third = told.machines[2]
    assert (third.cloud_id, third.spent, third.end) == ("i-third", None, None)
    assert told.total == 1.35 and told.currency == "USD"
    assert told.machines[1].checkpoint == "ckpt-000001200.pt"


def test_show_run_json_lists_machines_from_to_why(kept_alive: tuple[Bucket, RunRecord]) -> None:
    code, out, err = _run(["show", RUN, "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["run"] == RUN and data["group"] == "gpudesk-run-m-0000000001"
    first, second, third = data["machines"]
    assert (first["cloud_id"], first["from"], first["to"], first["why"]) == (
        "i-first", T0, T0 + 3600, "reclaimed")
    assert second["resumed_from_step"] == 1200 and second["spent"] == 0.45
    assert third["cloud_id"] == "i-third" and third["to"] is None
    assert (data["spent"], data["currency"], data["bucket_error"]) == (1.35, "USD", None)
    code, out, _ = _run(["show", RUN])
    assert code == 0
    assert "i-second" in out and "resumed from step 1200" in out and "0.45 USD" in out
    assert "spent 1.35 USD over 3 machine(s)" in out


def test_an_unreadable_bucket_still_shows_what_the_ledger_saw(
        kept_alive: tuple[Bucket, RunRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, "http://127.0.0.1:9")  # nothing listens there
    code, out, err = _run(["show", RUN, "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert [m["cloud_id"] for m in data["machines"]] == ["i-first", "i-second", "i-third"]
    assert data["spent"] is None and data["bucket_error"]


def test_the_run_page_shows_the_machines_of_a_kept_alive_run(
        kept_alive: tuple[Bucket, RunRecord], qtbot: Any, loop: Any) -> None:
    pytest.importorskip("pytestqt")
    from PySide6.QtCore import Qt

    from gpudesk.services.core.window_state import update_state
    from gpudesk.ui.run.run_page import RunPage

    update_state(run_selected=RUN)
    with Ledger() as ledger:
        page = RunPage(ledger)
        qtbot.addWidget(page)
        page.resize(1200, 800)
        page.show()
        view = page.machines_view
        qtbot.waitUntil(lambda: view.isVisible() and view.tree.topLevelItemCount() == 3,
                        timeout=30000)
        rows = [[view.tree.topLevelItem(i).text(c) for c in (0, 3, 4, 5)] for i in range(3)]
        assert rows == [["i-first", "reclaimed", "—", "0.90 USD"],
                        ["i-second", "reclaimed", "step 1200", "0.45 USD"],
                        ["i-third", "running", "—", "not counted"]]
        assert view.note.text() == "3 machine(s) so far; 1.35 USD in all."
        # the agents write on: Refresh reads the bucket again
        _put(kept_alive[0], f"runs/{RUN}/spend.json", {
            "run": RUN, "currency": "USD", "total": 1.5, "machines": [
                {"cloud_id": "i-third", "from": T0 + 9000, "to": None, "why": "started",
                 "spent": 0.15}]})
        # the rows come with the read's answer; its button is enabled once the read has
        # ended, a loop turn later (a click before that lands on a disabled button)
        qtbot.waitUntil(view.refresh_button.isEnabled, timeout=30000)
        qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "1.50 USD in all" in view.note.text(), timeout=30000)
        page.shutdown()


def test_a_run_moved_between_own_machines_lists_each_with_its_step(
        qtbot: Any, loop: Any) -> None:
    """Issue 30: no group, no bucket story: the run record's own machines, in order, with
    the step each resumed from, in ``show RUN --json`` and on the Run page."""
    pytest.importorskip("pytestqt")
    from gpudesk.services.core.window_state import update_state
    from gpudesk.ui.run.run_page import RunPage

    run = "proj-20260102-000000-cd34"
    record = RunRecord(id=run, project="/p", remote_project="/r/projects/p",
                       script="train.py", args=[], nproc=0,
                       nodes=[NodeRun("lab-b", None, f"/b/runs/{run}", "10.0.0.3")],
                       hops=[{"target": "lab-a", "host": "10.0.0.2", "attempt": 1,
                              "from": T0, "resumed_from_step": None, "checkpoint": ""},
                             {"target": "lab-b", "host": "10.0.0.3", "attempt": 2,
                              "from": T0 + 600, "resumed_from_step": 8,
                              "checkpoint": "ckpt-000000008.pt"}])
    record.save()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", run, "--json"]) == 0
    told = json.loads(out.getvalue())
    assert [(m["target"], m["from"], m["to"], m["why"], m["resumed_from_step"])
            for m in told["machines"]] == [("lab-a", T0, T0 + 600, "moved", None),
                                           ("lab-b", T0 + 600, None, "", 8)]
    update_state(run_selected=run)
    with Ledger() as ledger:
        page = RunPage(ledger)
        qtbot.addWidget(page)
        page.resize(1200, 800)
        page.show()
        view = page.machines_view
        qtbot.waitUntil(lambda: view.isVisible() and view.tree.topLevelItemCount() == 2,
                        timeout=30000)
        rows = [[view.tree.topLevelItem(i).text(c) for c in (0, 3, 4)] for i in range(2)]
        assert rows == [["lab-a", "moved to the next machine", "—"],
                        ["lab-b", "running", "step 8"]]
        page.shutdown()
