"""Checkpoint copies with a limit: the newest N per run within a size cap, older copies
dropped, and the data-out cost of a cloud machine said before the first copy."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_agent import wait_for
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import connect

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.first_boot import _paramiko_key
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias
from gpudesk.services.runs import spot_recovery
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord

GIB = 1 << 30


def _checkpoint(run_dir: Path, step: int) -> None:
    folder = run_dir / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"ckpt-{step:09d}.pt").write_bytes(b"w" * (1000 * step))
    (folder / f"ckpt-{step:09d}.json").write_text("0123456789")


def _here(record: RunRecord) -> list[str]:
    folder = spot_recovery.mirror_dir(record) / "checkpoints"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def record(sshd: SshdServer, tmp_path: Path) -> RunRecord:
    run_dir = tmp_path / "machine" / "runs" / "r-limit"
    for step in range(1, 6):
        _checkpoint(run_dir, step)
    with Ledger() as ledger:  # an AWS machine (data out $0.09/GB) that is this sshd
        m = ledger.add(Machine(id="m-ckpt00001", provider="aws", cloud_id="i-ckpt",
                               state="running", public_ip=sshd.host, ssh_port=sshd.port,
                               ssh_user=sshd.user, key_file=str(sshd.client_key)))
    PinStore().pin(host_alias(m), _paramiko_key(sshd.host_key_line))
    return RunRecord(id="r-limit", project=str(tmp_path), remote_project="", script="t.py",
                     args=[], nproc=1, nodes=[NodeRun(m.id, None, str(run_dir))])


def test_only_the_newest_two_are_copied_and_older_copies_go(
        sshd: SshdServer, record: RunRecord) -> None:
    run_dir = Path(record.main.run_dir)
    with connect(sshd) as conn:
        plan = spot_recovery.plan_mirror(conn, record)
        assert plan.keep == ("ckpt-000000004.pt", "ckpt-000000005.pt")
        assert plan.bytes == 4000 + 5000 + 20 and plan.over_cap == ()
        spot_recovery.mirror_once(conn, record)
        assert _here(record) == ["ckpt-000000004.json", "ckpt-000000004.pt",
                                 "ckpt-000000005.json", "ckpt-000000005.pt"]
        _checkpoint(run_dir, 6)  # training goes on: one more copy, the oldest copy goes
        result = spot_recovery.mirror_once(conn, record)
        assert result.bytes_sent == 6010  # only the new one travelled
        assert _here(record) == ["ckpt-000000005.json", "ckpt-000000005.pt",
                                 "ckpt-000000006.json", "ckpt-000000006.pt"]
        # a 7,000-byte cap keeps the newest that fits, never an older one instead
        capped = spot_recovery.plan_mirror(conn, record, cap_bytes=7000)
        assert capped.keep == ("ckpt-000000006.pt",) and capped.over_cap == (
            "ckpt-000000005.pt",)
        spot_recovery.mirror_once(conn, record, plan=capped)
        assert _here(record) == ["ckpt-000000006.json", "ckpt-000000006.pt"]
    with Ledger() as ledger:  # each copy is billed as data out, and counted
        assert sum(t.bytes_out for t in ledger.transfers("m-ckpt00001")) >= 9020 + 6010


def test_the_data_out_cost_is_said_before_the_first_copy(record: RunRecord) -> None:
    told: list[tuple[spot_recovery.MirrorState, list[str]]] = []
    mirror = spot_recovery.CheckpointMirror(
        record, HostKeyPolicy.refuse(), interval_s=3600,
        on_pull=lambda s: told.append((s, _here(record))))
    mirror.start()
    try:
        wait_for(lambda: len(told) >= 2, 60, "the estimate and the first copy")
    finally:
        mirror.stop(wait_s=30)
    (before, files_then), (after, files_after) = told[0], told[1]
    assert before.pulls == 0 and files_then == []  # said while nothing was copied yet
    assert before.next_bytes == 9020 and before.currency == "USD"
    assert before.cost == pytest.approx(9020 / GIB * 0.09)
    assert after.pulls == 1 and after.last_error == "" and len(files_after) == 4
