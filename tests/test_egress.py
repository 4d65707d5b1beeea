"""Pulls off a cloud machine are counted as data transfer out in the ledger, and spend
prices them; own machines count nothing. Against a real sshd as the machine."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd arrive as parameters
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import spot_recovery
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord


def _machine_with_a_run(server: SshdServer, tmp_path: Path, ledger: Ledger) -> tuple[str, Path]:
    start = time.time() - 600
    row = ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", zone="us-east-1a",
                             instance_type="g5.xlarge", price_per_hour=1.0, state="running",
                             public_ip=server.host, ssh_port=server.port, ssh_user=server.user,
                             created_at=start))
    ledger.update(row.id, launched_at=start, running_since=start)
    run_dir = tmp_path / "machine" / "runs" / "r1"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "ckpt-00000004.pt").write_bytes(os.urandom(300_000))
    (run_dir / "log").write_bytes(b"step 4\n" * 100)
    return row.id, run_dir


def _record(ref: str, run_dir: Path, identity: Path) -> RunRecord:
    return RunRecord(id="r1", project="/p", remote_project="/rp", script="train.py", args=[],
                     nproc=1, nodes=[NodeRun(ref, str(identity), str(run_dir))])


def test_pulls_from_a_cloud_machine_are_billed_transfer(sshd: SshdServer,
                                                        tmp_path: Path) -> None:
    with Ledger() as ledger:
        ledger_id, run_dir = _machine_with_a_run(sshd, tmp_path, ledger)
        record = _record(ledger_id, run_dir, sshd.client_key)
        with targets.open_connection(ledger_id, sshd.client_key,
                                     HostKeyPolicy.accept_new()) as conn:
            mirrored = spot_recovery.mirror_once(conn, record)  # checkpoints only
            pulled = runs.pull(conn, record, tmp_path / "local")  # the rest: log (+ nothing new)
            unchanged = runs.pull(conn, record, tmp_path / "local")
        assert mirrored.bytes_sent == 300_000 and unchanged.files_sent == 0
        sent = [t.bytes_out for t in ledger.transfers(ledger_id)]
        assert len(sent) == 2  # nothing is counted for a pull that copied nothing
        assert sent[0] >= 300_000 and sent[1] >= pulled.bytes_sent >= 700
        cost = spend.cost(spend.history(ledger, ledger.get(ledger_id)), time.time())  # type: ignore[arg-type]
        assert cost.transfer == pytest.approx(sum(sent) / 2**30 * 0.09)


def test_an_own_machine_counts_no_transfer(sshd: SshdServer, tmp_path: Path) -> None:
    with Ledger() as ledger:
        ledger_id, run_dir = _machine_with_a_run(sshd, tmp_path, ledger)
        ref = f"ssh://{sshd.user}@{sshd.host}:{sshd.port}"
        record = _record(ref, run_dir, sshd.client_key)
        with targets.open_connection(ref, sshd.client_key, HostKeyPolicy.accept_new()) as conn:
            assert runs.pull(conn, record, tmp_path / "local").bytes_sent == 300_700
        assert ledger.transfers(ledger_id) == []
