"""A run's bucket while gpudesk follows it and after it ends (issue 22): short-lived keys
renewed on the machine before they end (real sshd, moto's STS), the folder's deletion date
set once the run ended and lifted when it starts again (moto's S3 lifecycle)."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
import stat
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_sshd import SshdServer  # noqa: F401 - fixture
from fixtures_sshd import sshd  # noqa: F401 - fixture
from test_run_store import SECRET  # noqa: F401 - fixture
from test_run_store import recording  # noqa: F401 - fixture
from test_run_store import sts_access  # noqa: F401 - fixture
from test_run_store import to_moto  # noqa: F401 - fixture
from test_runs import PYTHON

from gpudesk.agent.store import CredentialSource
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig
from gpudesk.services.runs import run_store
from gpudesk.services.runs import run_upkeep
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunStatus
from gpudesk.services.storage import buckets
from gpudesk.services.storage import sts
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.uri import StoreUri

RUN = "proj-20261205-080000-ab12"
T0 = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def record_for(run_dir: str, store: StoreUri, *, creds: str = "sts", issued: datetime = T0,
               expires: datetime = T0 + timedelta(hours=2)) -> RunRecord:
    rec = RunRecord(id=RUN, project="/p", remote_project="/r/p", script="train.py", args=[],
                    nproc=0, python=PYTHON, nodes=[NodeRun("ssh://m", None, run_dir)],
                    store_uri=str(store.run(RUN).uri).rsplit("runs/", 1)[0],
                    store_region="us-east-1", store_credentials=creds)
    rec.store_uri = f"s3://{store.bucket}/{store.prefix}"
    if creds == "sts":
        rec.store_issued = run_store.expiry_text(issued)
        rec.store_expires = run_store.expiry_text(expires)
    rec.save()
    return rec


def test_keys_are_renewed_when_a_quarter_of_their_life_is_left() -> None:
    store = StoreUri("aws", "b")
    rec = record_for("/m/runs/x", store)  # 2 h keys (a Tencent main account's)
    at = run_upkeep.refresh_at(rec)
    assert at == (T0 + timedelta(hours=1, minutes=30)).timestamp()
    assert not run_upkeep.refresh_due(rec, at - 1) and run_upkeep.refresh_due(rec, at)
    short = record_for("/m/runs/x", store, expires=T0 + timedelta(minutes=20))
    # a quarter of 20 min is 5 min: never later than 10 min before the end
    assert run_upkeep.refresh_at(short) == (T0 + timedelta(minutes=10)).timestamp()
    long = record_for("/m/runs/x", store, expires=T0 + timedelta(hours=36))  # IAM user, AWS
    assert run_upkeep.refresh_at(long) == (T0 + timedelta(hours=27)).timestamp()
    assert run_upkeep.refresh_at(record_for("/m/runs/x", store, creds="role")) is None


def test_renewal_writes_new_keys_the_agent_picks_up_without_a_secret_in_argv(
        sshd: SshdServer, to_moto: Bucket, tmp_path: Path) -> None:
    store = StoreUri("aws", to_moto.name)
    run_dir = f"{tmp_path}/machine/runs/{RUN}"
    old_end = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=30)
    first = sts_access(to_moto.name, RUN, expires=old_end)
    conn = recording(sshd)
    with conn:
        written = run_store.write_config(conn, run_dir, RUN, first, python=PYTHON, keep=2)
    config = StoreConfig.from_dict(json.loads(Path(written.config_path).read_text()))
    source = CredentialSource(config)
    assert source.get().key_id == first.sts.key_id  # type: ignore[union-attr]

    issued = old_end - timedelta(hours=1)
    rec = record_for(run_dir, store, issued=issued, expires=old_end)
    asked: list[tuple[str, str, str]] = []

    def real_sts(target: str, run_id: str, *, uri: str) -> StoreAccess:
        """New keys from moto's STS, limited to the run's folder as the desktop asks."""
        asked.append((target, run_id, uri))
        keys = sts.run_credentials("aws", "us-east-1", to_moto.moto.credentials, store, run_id,
                                   hours=1)
        return StoreAccess(store, "us-east-1", run_id, sts=keys)

    conns: list[Any] = []

    def connect() -> Any:
        conns.append(recording(sshd))
        return conns[-1]

    said: list[str] = []
    now = [run_upkeep.refresh_at(rec) - 5]  # type: ignore[operator]
    renewer = run_upkeep.KeyRenewer(rec, connect, said.append, clock=lambda: now[0],
                                    access_for=real_sts)
    renewer.renew_now()
    assert said == [] and asked == []  # not due yet: nothing asked, nothing written
    now[0] += 10
    renewer.renew_now()
    assert asked == [("ssh://m", RUN, rec.store_uri)]
    (line,) = said
    assert line.template == run_upkeep.MSG_KEYS_NEW
    assert RunRecord.load(RUN).store_expires == rec.store_expires == line.values["expires"]
    assert datetime.fromisoformat(rec.store_expires.replace("Z", "+00:00")) > old_end

    creds = Path(tmp_path / "machine" / "store-credentials" / f"{RUN}.json")
    fresh = json.loads(creds.read_text())
    assert fresh["key_id"] != first.sts.key_id  # type: ignore[union-attr]
    assert fresh["expiration"] == rec.store_expires
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    for c in conns:
        assert all(fresh["secret"] not in cmd and SECRET not in cmd for cmd in c.commands)
    # the agent's client sees the changed file and signs with the new keys
    assert source.get().key_id == fresh["key_id"]
    Store(config, source).put_bytes(config.prefix + "probe", b"1")
    assert f"runs/{RUN}/probe" in to_moto.keys("runs/")
    # the config was not rewritten: the uploader is not restarted by a renewal
    assert json.loads(Path(written.config_path).read_text())["credentials_file"] == str(creds)


def test_a_renewal_that_fails_is_said_once_and_tried_again(tmp_path: Path) -> None:
    rec = record_for(f"{tmp_path}/runs/{RUN}", StoreUri("aws", "b"))
    said: list[str] = []
    tries: list[int] = []

    def refused(*_a: Any, **_k: Any) -> StoreAccess:
        tries.append(1)
        return StoreAccess(StoreUri("aws", "b"), "us-east-1", RUN, why_none="AccessDenied")

    renewer = run_upkeep.KeyRenewer(rec, lambda: None, said.append,
                                    clock=lambda: (T0 + timedelta(hours=1, minutes=45)).timestamp(),
                                    access_for=refused)
    renewer.renew_now()
    renewer.renew_now()
    assert len(tries) == 2
    (line,) = said
    assert line.template == run_upkeep.MSG_KEYS_FAILED
    assert line.values["why"] == "AccessDenied"
    assert line.values["expires"] == "2026-12-05T10:00:00Z"


def _rules(client: Any, name: str) -> dict[str, Any]:
    return {r["ID"]: r for r in buckets.get_rules(client, name)}


def test_the_folder_is_deleted_n_days_after_the_end_once_and_kept_while_it_runs_again(
        to_moto: Bucket, tmp_path: Path) -> None:
    client = to_moto.s3
    store = StoreUri("aws", to_moto.name)
    rec = record_for(f"{tmp_path}/runs/{RUN}", store, creds="role")
    running = RunStatus("running", pid=1)
    assert run_upkeep.expire_after_end(rec, running, keep_days=7, client=client) is None
    assert buckets.RUN_RULE_PREFIX + RUN not in _rules(client, to_moto.name)

    ended = RunStatus("exited", code=0)
    said = run_upkeep.expire_after_end(rec, ended, keep_days=7, client=client, now=T0)
    assert said is not None and said.template == run_upkeep.MSG_KEPT_UNTIL
    assert said.values == {"run": RUN, "date": "2026-12-13", "days": 7}  # whole days, never sooner
    rule = _rules(client, to_moto.name)[buckets.RUN_RULE_PREFIX + RUN]
    assert rule["Filter"]["Prefix"] == f"runs/{RUN}/"
    assert rule["Expiration"]["Date"].date().isoformat() == "2026-12-13"
    assert RunRecord.load(RUN).store_kept == "1:7"
    # seen ending again (the window and the CLI both follow): nothing new is asked
    assert run_upkeep.expire_after_end(rec, ended, keep_days=7, client=client) is None

    said_lines: list[str] = []
    rec = RunRecord.load(RUN)
    run_upkeep.lift_expiry(rec, client=client)
    assert buckets.RUN_RULE_PREFIX + RUN not in _rules(client, to_moto.name)
    assert RunRecord.load(RUN).store_kept == ""
    assert said_lines == []

    rec.attempt += 1  # it ran again and ended: a new date; "keep" (0 days) sets none
    kept = run_upkeep.expire_after_end(rec, RunStatus("exited", code=1), keep_days=0,
                                       client=client)
    assert kept is not None and kept.template == run_upkeep.MSG_KEPT
    assert buckets.RUN_RULE_PREFIX + RUN not in _rules(client, to_moto.name)


def test_a_bucket_that_refuses_the_rule_is_said_and_the_folder_kept(
        to_moto: Bucket, tmp_path: Path) -> None:
    store = StoreUri("aws", "no-such-bucket-gpudesk")
    rec = record_for(f"{tmp_path}/runs/{RUN}", store, creds="role")
    said = run_upkeep.expire_after_end(rec, RunStatus("exited", code=0), keep_days=3,
                                       client=to_moto.s3)
    assert said is not None and said.template == run_upkeep.MSG_KEEP_FAILED
    assert "NoSuchBucket" in said.values["why"] and said.values["why"].template
    assert RunRecord.load(RUN).store_kept == ""  # tried again at the next end seen


@pytest.mark.parametrize("why", ["AccessDenied", ""])
def test_a_resume_without_its_bucket_says_so(sshd: SshdServer, tmp_path: Path,
                                             why: str) -> None:
    from gpudesk.services.runs import detached

    rec = record_for(f"{tmp_path}/runs/{RUN}", StoreUri("aws", "b"))
    lines: list[str] = []
    access = StoreAccess(StoreUri("aws", "b"), "us-east-1", RUN, why_none=why) if why else None
    with recording(sshd) as conn:
        argv = detached._attach_store(conn, rec, access, lines.append, resume=True)
    assert argv == []
    (line,) = lines
    assert line.template == detached.MSG_RESUME_NO_STORE
    assert line.values == {"run": RUN, "uri": rec.store_uri, "why": why or "-"}
