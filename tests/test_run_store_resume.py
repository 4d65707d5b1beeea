"""Resume anywhere, whole process: a run on machine A (a real sshd, real torchrun, the real
agent deployed there uploading to moto's S3 server) is killed like a spot reclaim, its disk
and the laptop copy gone; it resumes on machine B (a second sshd, another run root) from
the bucket alone and ends with the same weights as an uninterrupted run."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
import torch
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_sshd import SshdServer  # noqa: F401 - fixtures
from fixtures_sshd import sshd  # noqa: F401 - fixtures
from fixtures_sshd import sshd_b  # noqa: F401 - fixtures
from metadata_standin import MetadataStandin
from test_run_store import KEY_ID
from test_run_store import SECRET
from test_run_store import TOKEN
from test_run_store import recording
from test_run_store import sts_access
from test_runs import PYTHON
from test_runs import connect
from test_runs import gpudesk
from test_runs import result
from test_runs import run_cmd
from test_runs import training_project
from test_runs import wait_for

from gpudesk.agent.run_folder import pid_alive
from gpudesk.agent.runs import process_tree
from gpudesk.agent.runs import read_pid
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import spot_recovery
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.access import TempCredentials
from gpudesk.services.storage.uri import StoreUri

STEPS = ["--max-steps", "16", "--ckpt-steps", "4"]
ROLE = "gpudesk-run"


def _kill_tree(pid: int | None) -> list[int]:
    if pid is None:
        return []
    tree = process_tree(pid)
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    return tree


def reclaim(root: Path, run_id: str) -> None:
    """What a spot reclaim does to the machine: every process killed at once (the agent
    first, so it cannot notice the end of the run), then the disk is gone."""
    gone = _kill_tree(read_pid(root / "agent" / "data" / "agent.pid"))
    gone += _kill_tree(read_pid(root / "runs" / run_id / "pid"))
    assert len(gone) >= 3, gone  # the agent, the launcher, torchrun (and its worker)
    wait_for(lambda: not any(pid_alive(p) for p in gone), "the end of the killed processes")
    shutil.rmtree(root)


@pytest.fixture
def machines(tmp_path: Path, bucket: Bucket,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Two run roots; the agents there reach moto; nothing they started outlives the test."""
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", bucket.moto.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    monkeypatch.setenv("GPUDESK_STORE_EVERY_S", "0.2")
    for name in ("GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR"):
        monkeypatch.delenv(name, raising=False)
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    yield a, b
    for root in (a, b, tmp_path / "baseline"):
        _kill_tree(read_pid(root / "agent" / "data" / "agent.pid"))
        for pid_file in (root / "runs").glob("*/pid"):
            _kill_tree(read_pid(pid_file))


def _latest(bucket: Bucket, run_id: str, prefix: str = "") -> str:
    """The manifest's latest checkpoint ("" while there is no manifest)."""
    key = f"{prefix}runs/{run_id}/manifest.json"
    if key not in bucket.keys(key):
        return ""
    return str(json.loads(bucket.read(key)).get("latest") or "")


def _same_weights(resumed: dict[str, object], baseline: dict[str, object]) -> None:
    assert (resumed["start_step"], resumed["step"]) == (8, 16)
    assert resumed["losses"] == baseline["losses"][8:]  # type: ignore[index]
    state, base = resumed["state"], baseline["state"]
    assert state.keys() == base.keys()  # type: ignore[attr-defined]
    for key in base:  # type: ignore[attr-defined]
        assert torch.equal(state[key], base[key]), key  # type: ignore[index]


def _run_on_a(sshd: SshdServer, root: Path, project: Path, out: Path,
              access: StoreAccess) -> tuple[runs.RunRecord, list[str], list[str]]:
    request = runs.RunRequest(project, "train.py", ["--out", str(out), *STEPS,
                                                    "--pause-at", "10"],
                              nproc=1, python=PYTHON, root=str(root), run_id=access.run_id)
    said: list[str] = []
    conn = recording(sshd)
    with conn:
        record = runs.launch([conn], [(sshd.url, str(sshd.client_key))], request,
                             report=said.append, store=access)
    return record, said, conn.commands


def test_killed_on_machine_a_resumes_on_machine_b_from_the_bucket_alone(
        sshd: SshdServer, sshd_b: SshdServer, bucket: Bucket, machines: tuple[Path, Path],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine_a, machine_b = machines
    project = training_project(tmp_path / "proj")
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, tmp_path / "baseline", project, "--accept-new", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()

    run_id = runs.new_run_id("proj")
    record, said, commands = _run_on_a(sshd, machine_a, project, broken,
                                       sts_access(bucket.name, run_id))
    assert record.id == run_id and record.store_uri == f"s3://{bucket.name}/"
    assert (record.store_region, record.store_credentials) == ("us-east-1", "sts")
    assert any(f"s3://{bucket.name}/runs/{run_id}/ with short-lived keys that end at" in line
               for line in said), said
    for command in commands:  # the keys travelled on stdin only
        assert SECRET not in command and TOKEN not in command and KEY_ID not in command
    keys = machine_a / "store-credentials" / f"{run_id}.json"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    wait_for(lambda: (broken / "paused-10-rank0").exists(), "the pause at step 10")
    wait_for(lambda: _latest(bucket, run_id) == "ckpt-000000008.pt",
             "the step-8 checkpoint in the bucket")
    assert f"runs/{run_id}/checkpoints/ckpt-000000008.pt" in bucket.keys(f"runs/{run_id}/")

    reclaim(machine_a, run_id)
    shutil.rmtree(spot_recovery.mirror_dir(record), ignore_errors=True)  # no laptop copy
    assert spot_recovery.mirrored_checkpoints(record) == []
    for saved in runs.RunRecord.folder().glob("*.json"):  # no secret on the laptop either
        assert SECRET not in saved.read_text() and TOKEN not in saved.read_text()
    (broken / "go-10").touch()  # (the resumed run passes step 10 again)

    new_keys = TempCredentials("ASIAMACHINEB00000001", "machine-b/secret", "machine-b-token",
                               datetime.now(UTC) + timedelta(hours=1))
    said_b: list[str] = []
    recovered = spot_recovery.recover(
        runs.RunRecord.load(run_id), sshd_b.url, str(sshd_b.client_key),
        HostKeyPolicy.expect(sshd_b.host_key_fingerprint), report=said_b.append,
        store=StoreAccess(StoreUri("aws", bucket.name), "us-east-1", run_id, sts=new_keys),
        root=str(machine_b))
    run_dir_b = machine_b / "runs" / run_id
    assert recovered.main.run_dir == str(run_dir_b) and recovered.attempt == 2
    assert any("has no checkpoint of run" in line and "fetches the latest one" in line
               for line in said_b), said_b
    with connect(sshd_b) as conn, (tmp_path / "log-b").open("wb") as shown:
        final, _ = runs.follow(conn, recovered.main.run_dir, shown, python=PYTHON,
                               offset=recovered.log_offset)
    log_b = (tmp_path / "log-b").read_text()
    assert final.state == "exited" and final.code == 0, log_b[-3000:]
    fetched = run_dir_b / "checkpoints" / "ckpt-000000008.pt"
    assert f"GPUDESK_RESUME_FROM={fetched}" in log_b
    _same_weights(result(broken), result(whole))
    assert not machine_a.exists()
    # B's agent carries on: the run's last checkpoint reaches the bucket too
    wait_for(lambda: _latest(bucket, run_id) == "ckpt-000000016.pt",
             "the step-16 checkpoint in the bucket")
    assert runs.RunRecord.load(run_id).main.run_dir == str(run_dir_b)


def test_cli_recover_resumes_a_role_run_on_another_machine_from_the_bucket(
        sshd: SshdServer, sshd_b: SshdServer, bucket: Bucket, machines: tuple[Path, Path],
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``gpudesk recover RUN --on B``: the run's role carries over, so B needs no new keys;
    the laptop copy never existed."""
    machine_a, machine_b = machines
    project = training_project(tmp_path / "proj")
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, tmp_path / "baseline", project, "--accept-new", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()
    issued: list[str] = []

    def issue() -> dict[str, str]:
        issued.append(f"ASIAROLE{len(issued):012d}")
        expiry = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"Code": "Success", "AccessKeyId": issued[-1], "SecretAccessKey": "role-secret",
                "Token": "role-token", "Expiration": expiry}

    with MetadataStandin("aws", ROLE, "i-0123", "us-east-1", issue) as md:
        monkeypatch.setenv("GPUDESK_STORE_METADATA_AWS", md.url)
        run_id = runs.new_run_id("proj")
        access = StoreAccess(StoreUri("aws", bucket.name, "lab/"), "us-east-1", run_id,
                             role=ROLE)
        record, said, _ = _run_on_a(sshd, machine_a, project, broken, access)
        assert any(f"(the machine's role {ROLE})" in line for line in said), said
        assert not (machine_a / "store-credentials").exists()
        wait_for(lambda: (broken / "paused-10-rank0").exists(), "the pause at step 10")
        wait_for(lambda: _latest(bucket, run_id, "lab/") == "ckpt-000000008.pt",
                 "the step-8 checkpoint in the bucket")
        reclaim(machine_a, run_id)
        assert spot_recovery.mirrored_checkpoints(record) == []
        (broken / "go-10").touch()

        assert gpudesk("recover", run_id, "--on", sshd_b.url, "--identity",
                       str(sshd_b.client_key), "--accept-new",
                       "--remote-root", str(machine_b)) == 0
        out = capsys.readouterr()
        assert out.out.splitlines() == [run_id]
        assert "fetches the latest one from" in out.err, out.err
        run_dir_b = machine_b / "runs" / run_id
        config_b = json.loads((run_dir_b / "store-config.json").read_text())
        assert (config_b["role"], config_b["prefix"]) == (ROLE, f"lab/runs/{run_id}/")
        assert gpudesk("logs", run_id, "--follow") == 0
        assert "GPUDESK_RESUME_FROM=" in capsys.readouterr().out
    _same_weights(result(broken), result(whole))
    assert issued, "the agents never asked the metadata service for the role's keys"


EXPORT = '''"""train.py, then what the run makes, written where outputs belong."""
import torch
from train import parse, train

from gpudesk.training import output_dir

result = train(parse())
if result["rank"] == 0:
    torch.save(result["state"], output_dir() / "model.pt")
    (output_dir() / "report.txt").write_text(f"steps {result['step']}\\n")
'''


def test_own_machines_with_a_bucket_from_the_documented_cli_only(
        sshd: SshdServer, sshd_b: SshdServer, bucket: Bucket, machines: tuple[Path, Path],
        tmp_path: Path, capsys: pytest.CaptureFixture[str], memory_keyring: object) -> None:
    """Issue 30, done-when: two own machines added with ``add-machine`` (profile: key file,
    Python, folder; A with a bucket on moto's S3), a run on A SIGKILLed like a reclaim with
    no laptop copy, ``gpudesk recover RUN --on mb`` from the bucket alone: identical weights,
    ``show RUN --json`` lists both machines with the step B resumed from, and the outputs
    come down intact. Only verbs and flags the README documents."""
    machine_a, machine_b = machines
    save_credentials(bucket.moto.credentials)  # the account that owns the bucket
    project = training_project(tmp_path / "proj", {"export.py": EXPORT})
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, tmp_path / "baseline", project, "--accept-new", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()

    # a bucket that is not there: refused before the login, nothing added
    assert gpudesk("add-machine", "ma", sshd.url, "--identity", str(sshd.client_key),
                   "--store", "s3://missing-lab-bucket/x", "--accept-new") != 0
    assert "The bucket missing-lab-bucket does not exist" in capsys.readouterr().err
    for name, server, root, store in (("ma", sshd, machine_a, [f"s3://{bucket.name}/lab"]),
                                      ("mb", sshd_b, machine_b, [])):
        assert gpudesk("add-machine", name, server.url, "--identity", str(server.client_key),
                       "--python", PYTHON, "--remote-root", str(root), "--accept-new",
                       *(["--store", *store] if store else [])) == 0
        said = capsys.readouterr().out
        assert f"host key {server.host_key_fingerprint} pinned" in said, said
        assert "torch" in said
        if store:
            assert f"runs keep their data in {store[0]}/ (us-east-1)" in said, said
    assert gpudesk("show", "ma", "--json") == 0
    assert json.loads(capsys.readouterr().out)["store"] == {
        "uri": f"s3://{bucket.name}/lab/", "role": "", "credentials": "sts",
        "region": "us-east-1"}

    # `run --store` with a missing bucket: refused before anything is made on the machine
    assert gpudesk("run", "--on", "mb", "--project", str(project), "--store",
                   "s3://missing-lab-bucket/x", "--detach", "--", "train.py", "--out",
                   str(broken)) != 0
    assert "The bucket missing-lab-bucket does not exist" in capsys.readouterr().err
    assert not (machine_b / "runs").exists() and not (machine_b / "projects").exists()

    # no --identity, --python or --remote-root: the profile's
    assert gpudesk("run", "--on", "ma", "--project", str(project), "--detach", "--",
                   "export.py", "--out", str(broken), *STEPS, "--pause-at", "10") == 0
    run_id = capsys.readouterr().out.splitlines()[0]
    record = runs.RunRecord.load(run_id)
    assert record.main.run_dir == str(machine_a / "runs" / run_id)
    assert (record.store_uri, record.store_credentials) == (f"s3://{bucket.name}/lab/", "sts")
    wait_for(lambda: (broken / "paused-10-rank0").exists(), "the pause at step 10")
    wait_for(lambda: _latest(bucket, run_id, "lab/") == "ckpt-000000008.pt",
             "the step-8 checkpoint in the bucket")
    reclaim(machine_a, run_id)
    shutil.rmtree(spot_recovery.mirror_dir(record), ignore_errors=True)  # no laptop copy
    (broken / "go-10").touch()

    assert gpudesk("recover", run_id, "--on", "mb") == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [run_id]
    assert "fetches the latest one from" in out.err, out.err
    assert gpudesk("logs", run_id, "--follow") == 0
    assert "GPUDESK_RESUME_FROM=" in capsys.readouterr().out
    _same_weights(result(broken), result(whole))

    assert gpudesk("show", run_id, "--json") == 0
    told = json.loads(capsys.readouterr().out)
    hops = [(m["target"], m["resumed_from_step"]) for m in told["machines"]]
    assert hops == [("ma", None), ("mb", 8)], told
    assert told["machines"][0]["why"] == "moved" and told["machines"][0]["to"] is not None

    wait_for(lambda: f"lab/runs/{run_id}/outputs/model.pt" in bucket.keys("lab/"),
             "the outputs in the bucket")
    down = tmp_path / "down"
    assert gpudesk("outputs", run_id, "--download", str(down)) == 0
    capsys.readouterr()
    files = {p.relative_to(down).as_posix() for p in down.rglob("*") if p.is_file()}
    (model,) = [f for f in files if f.endswith("model.pt")]
    (report,) = [f for f in files if f.endswith("report.txt")]
    assert (down / report).read_text() == "steps 16\n"
    state, base = torch.load(down / model), result(whole)["state"]
    assert state.keys() == base.keys()
    for key in base:
        assert torch.equal(state[key], base[key]), key


def test_run_store_gives_one_run_on_an_ssh_address_its_own_bucket(
        sshd: SshdServer, bucket: Bucket, machines: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], memory_keyring: object) -> None:
    """``gpudesk run --store URI`` on a machine with no profile at all (an ssh:// address):
    the bucket is checked, the run gets short-lived keys to its folder there, and its last
    checkpoint reaches the bucket."""
    machine_a, _ = machines
    save_credentials(bucket.moto.credentials)
    project = training_project(tmp_path / "proj")
    assert gpudesk(*run_cmd(sshd, machine_a, project, "--accept-new", "--store",
                            f"s3://{bucket.name}/solo", "--detach", "--", "train.py",
                            "--out", str(tmp_path / "out"), "--max-steps", "4",
                            "--ckpt-steps", "4")) == 0
    run_id = capsys.readouterr().out.splitlines()[0]
    record = runs.RunRecord.load(run_id)
    assert (record.store_uri, record.store_region, record.store_credentials) == (
        f"s3://{bucket.name}/solo/", "us-east-1", "sts")
    assert (machine_a / "store-credentials" / f"{run_id}.json").is_file()
    assert gpudesk("logs", run_id, "--follow") == 0
    wait_for(lambda: _latest(bucket, run_id, "solo/") == "ckpt-000000004.pt",
             "the step-4 checkpoint in the bucket")
