"""A run's own checkpoint and restart times feed its expected cost on spot (issue 33,
item 3): ``gpudesk offers --spot --run RUN`` on a recorded run — its story in the bucket
(moto's S3: spend.json and machines/*.json as the agents write them) and the checkpoint
sidecars the desktop mirrored — instead of the assumed defaults, each figure with its
source.

The recorded run: i-first reclaimed at T0+1 h, the run going on on i-second 12 min later
(after set-up and the checkpoint fetch); i-second reclaimed at T0+3 h, going on on
i-third 16 min later. Checkpoints every 20 min on i-second (written in 40, 44 and 38 s),
one more on i-third (90 s). Medians: restart 14 min, interval 20 min, write 42 s.
"""
# ruff: noqa: F811 - fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
import math
from typing import Any

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.calc import spot_risk
from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.spot_rates import SpotRate
from gpudesk.services.cloud.spot_rates import save_rates
from gpudesk.services.core.paths import cache_dir
from gpudesk.services.plan import run_history
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.run_story import Stint
from gpudesk.services.runs.spot_recovery import mirror_dir
from gpudesk.services.storage.clients import ENDPOINT_ENV

RUN = "gpt2-20261205-090000-cd34"
T0 = 1_796_300_000.0
H = 3600.0
OFFERS = ["offers", "--model", "gpt2", "--batch", "1", "--seq", "512", "--precision",
          "amp-fp16", "--tokens", "2e10", "--spot", "--provider", "aws", "--json"]


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _put(b: Bucket, key: str, data: Any) -> None:
    b.s3.put_object(Bucket=b.name, Key=key, Body=json.dumps(data).encode())


def _sidecar(record: RunRecord, step: int, at: float, write_s: float, host: str) -> None:
    folder = mirror_dir(record) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"ckpt-{step:09d}.json").write_text(json.dumps({
        "step": step, "file": f"ckpt-{step:09d}.pt", "bytes": 1, "sha256": "0" * 64,
        "time": at, "write_s": write_s, "host": host, "pid": 1}), encoding="utf-8")


@pytest.fixture
def recorded(bucket: Bucket, memory_keyring: Any, monkeypatch: pytest.MonkeyPatch
             ) -> RunRecord:
    credentials.save_credentials(bucket.moto.credentials)
    monkeypatch.setenv(ENDPOINT_ENV, bucket.moto.endpoint)
    record = RunRecord(id=RUN, project="/p", remote_project="/r/p", script="train.py",
                       args=[], nproc=1, nodes=[NodeRun("m-0000000009", None, f"/r/runs/{RUN}")],
                       store_uri=f"s3://{bucket.name}/", store_region="us-east-1",
                       store_credentials="role", checkpoint_every_min=20.0)
    record.save()
    root = f"runs/{RUN}/"
    _put(bucket, root + "spend.json", {"run": RUN, "currency": "USD", "total": 2.0, "machines": [
        {"cloud_id": "i-first", "from": T0, "to": T0 + H, "why": "reclaimed", "spent": 0.5},
        {"cloud_id": "i-second", "from": T0 + H + 300, "to": T0 + 3 * H, "why": "reclaimed",
         "spent": 1.0},
        {"cloud_id": "i-third", "from": T0 + 3 * H + 240, "to": None, "why": "started",
         "spent": 0.5}]})
    _put(bucket, root + "machines/i-second.json", {
        "run": RUN, "cloud_id": "i-second", "from": T0 + H + 300, "why": "replaced",
        "resumed_from_step": 100, "checkpoint": "ckpt-000000100.pt",
        "resumed_at": T0 + H + 12 * 60})
    _put(bucket, root + "machines/i-third.json", {
        "run": RUN, "cloud_id": "i-third", "from": T0 + 3 * H + 240, "why": "replaced",
        "resumed_from_step": 400, "checkpoint": "ckpt-000000400.pt",
        "resumed_at": T0 + 3 * H + 16 * 60})
    for i, write in enumerate((40.0, 44.0, 38.0)):
        _sidecar(record, 200 + 100 * i, T0 + 1.5 * H + i * 20 * 60, write, "host-second")
    _sidecar(record, 500, T0 + 3.5 * H, 90.0, "host-third")  # after a reclaim: no gap
    return record


def test_the_figures_of_a_recorded_run(recorded: RunRecord) -> None:
    figures = run_history.of_run(recorded)
    assert figures.note == ""
    assert figures.restart_minutes.value == pytest.approx(14.0)
    assert figures.restart_minutes.samples == 2
    assert figures.checkpoint_minutes.value == pytest.approx(20.0)
    assert figures.checkpoint_minutes.samples == 2
    assert figures.checkpoint_cost_seconds.value == pytest.approx(42.0)
    a = figures.assumptions(run_history.given({}))
    assert (a.checkpoint_minutes, a.restart_minutes, a.checkpoint_cost_seconds) == (
        pytest.approx(20.0), pytest.approx(14.0), pytest.approx(42.0))
    assert a.assumed is False
    sources = dict(a.sources)
    assert sources["restart_minutes"] == (
        f"run {RUN}: median of 2 reclaim(s) to the run going on again (the bucket "
        f"{recorded.store_uri})")
    assert "median write time of 4 checkpoint(s)" in sources["checkpoint_cost_seconds"]
    # a figure the user gives wins over the run's
    mine = figures.assumptions(run_history.given({"restart_minutes": 5.0}))
    assert mine.restart_minutes == 5.0 and dict(mine.sources)["restart_minutes"] == \
        run_history.GIVEN and mine.checkpoint_minutes == pytest.approx(20.0)


def test_offers_spot_run_ranks_with_the_runs_own_figures(recorded: RunRecord) -> None:
    code, out, err = _run(OFFERS)
    assert code == 0, err
    plain = json.loads(out)["offers"]
    row = next(r for r in plain if r["fits"] and r["price_per_hour"] is not None)
    itype, region = row["instance_type"], row["region"]
    # a 5 % an-hour rate for that offer (share 1 - e^-1 over 20 hours)
    save_rates(cache_dir(), [SpotRate("aws", region, itype, -math.expm1(-1.0), None, None,
                                      "test 5%/h", "test rate", "2026-12-01",
                                      period_hours=20.0)])
    code, out, err = _run([*OFFERS, "--run", RUN])
    assert code == 0, err
    data = json.loads(out)
    assert data["run_figures"]["restart_minutes"]["value"] == pytest.approx(14.0)
    got = next(r for r in data["offers"] if r["instance_type"] == itype
               and r["region"] == region)
    assert got["assumed"] is False
    assert (got["checkpoint_minutes"], got["restart_minutes"],
            got["checkpoint_cost_seconds"]) == (pytest.approx(20.0), pytest.approx(14.0),
                                                pytest.approx(42.0))
    assert got["assumption_sources"]["restart_minutes"].startswith(f"run {RUN}: median of 2")
    job = spot_risk.SpotJob(got["hours"], got["price_per_hour"], 0.05, 20 / 60, 14 / 60,
                            42 / 3600)
    assert got["expected_cost"] == pytest.approx(spot_risk.outlook(job).expected_cost,
                                                 abs=1e-6)
    assert got["best_checkpoint_minutes"] == pytest.approx(
        spot_risk.best_checkpoint_interval(42 / 3600, 0.05) * 60, abs=1e-6)
    # without --run the same row is counted with the defaults, said to be assumed
    code, out, _ = _run(OFFERS)
    row = next(r for r in json.loads(out)["offers"] if r["instance_type"] == itype
               and r["region"] == region)
    assert row["assumed"] is True and row["restart_minutes"] == 15.0
    assert row["assumption_sources"]["restart_minutes"] == run_history.ASSUMED
    # in words too
    code, out, _ = _run([a for a in OFFERS if a != "--json"] + ["--run", RUN])
    assert code == 0
    assert "Checkpoint every 20 min, 42 s to write, 14 min to restart after a reclaim:" in out
    assert f"restart minutes: run {RUN}: median of 2 reclaim(s)" in out


def test_an_unknown_run_is_refused_in_words(memory_keyring: Any) -> None:
    code, _out, err = _run([*OFFERS, "--run", "no-such-run-20261205-000000-0000"])
    assert code == 2 and "no-such-run" in err


def test_a_restart_without_the_agents_word_says_the_fetch_is_left_out() -> None:
    stints = [Stint("i-a", T0, T0 + H, "reclaimed", None, "USD"),
              Stint("i-b", T0 + H + 600, None, "", None, "USD")]
    m = run_history.restart_figure(stints, "the ledger")
    assert m.value == pytest.approx(10.0) and m.samples == 1
    assert m.source.endswith("the checkpoint fetch is not in every one")
    none = run_history.restart_figure([Stint("i-a", T0, None, "", None, "USD")], "x")
    assert none.value is None and none.source == run_history.ASSUMED


def test_the_plan_page_takes_a_chosen_runs_times(recorded: RunRecord, qtbot: Any,
                                                loop: Any) -> None:
    from cloud_window import offer_row
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QComboBox

    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.plan.plan_page import PlanPage

    page = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(page)
    page.resize(1280, 800)
    page.show()
    page.spot.click()
    assert page.spot.isChecked()
    page.select_row(0)
    first = page.selected_offer()
    assert first is not None and first.risk is not None
    o = first.offer
    # the cloud's rate for it, as load_rates() reads it from the cache at start
    page.spot_rates = {(o.provider, o.region, o.instance_type): SpotRate(
        o.provider, o.region, o.instance_type, -math.expm1(-1.0), None, None, "test 5%/h",
        "test rate", "2026-12-01", period_hours=20.0)}
    page.recompute()
    page.select_row(offer_row(page, o.instance_type, o.region))
    panel = page.spot_panel
    combo = panel.findChild(QComboBox, "spotRunChoice")
    assert combo is not None and combo.itemText(0) == "gpudesk's defaults"
    assert combo.findData(RUN) > 0
    assert "restart 15 min (assumed)" in panel.checkpoint.text()
    combo.setFocus()
    while combo.currentData() != RUN:  # chosen with the keyboard, as a person does
        qtbot.keyClick(combo, Qt.Key.Key_Down)

    def measured() -> bool:
        r = page.selected_offer()
        return r is not None and r.risk is not None and not r.risk.assumptions.assumed

    qtbot.waitUntil(measured, timeout=20000)
    r = page.selected_offer()
    assert r is not None and r.risk is not None
    a = r.risk.assumptions
    assert (a.checkpoint_minutes, a.restart_minutes, a.checkpoint_cost_seconds) == (
        pytest.approx(20.0), pytest.approx(14.0), pytest.approx(42.0))
    assert panel.checkpoint.text().startswith("Checkpoint every 20 min, restart 14 min;")
    assert f"restart minutes: run {RUN}: median of 2 reclaim(s)" in panel.checkpoint.toolTip()
    job = spot_risk.SpotJob(r.hours, r.price_per_hour, 0.05, 20 / 60, 14 / 60, 42 / 3600)
    assert r.risk.outlook is not None
    assert r.risk.outlook.expected_cost == pytest.approx(spot_risk.outlook(job).expected_cost)
    qtbot.keyClick(combo, Qt.Key.Key_Home)  # back to the defaults
    qtbot.waitUntil(lambda: page.selected_offer() is not None
                    and page.selected_offer().risk.assumptions.assumed, timeout=5000)


def test_a_checkpoint_says_how_long_its_write_took(tmp_path: Any) -> None:
    from gpudesk.training.checkpoint import write_checkpoint

    info = write_checkpoint(tmp_path, 7, {"weights": [1.0, 2.0]})
    (read,) = run_history.read_sidecars(tmp_path)
    assert read == json.loads(info.sidecar.read_text(encoding="utf-8"))
    assert read["step"] == 7 and isinstance(read["write_s"], float) and read["write_s"] >= 0
