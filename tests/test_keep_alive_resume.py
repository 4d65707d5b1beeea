"""A keep-alive run after a reclaim, whole process, with the desktop not running.

Machine A (a real sshd, its own run root, real torchrun, the real agent uploading to moto's
S3 through the machine's role) runs what the desktop launched after it wrote the launch
package (``run_package``: run.json, the code and the agent bundle) into the bucket. A is
reclaimed: every process killed at once, its disk and the laptop copy gone. The cloud's
group then starts machine B, a second sshd with another run root: its first boot runs the
keep-alive user data ``first_boot.user_data`` makes, as cloud-init would (the metadata
service and systemd replaced by the tests' stand-ins); it fetches the agent with the role's
credentials, installs it as the guard and resumes the run from the bucket alone. The run
ends with the same weights as an uninterrupted run. A late third machine finds the run
succeeded and starts nothing; a code archive that is not run.json's is refused in the
agent's log; an agent bundle that is not the user data's is never unpacked.
"""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import base64
import getpass
import gzip
import hashlib
import io
import json
import shlex
import shutil
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_sshd import SshdServer  # noqa: F401 - fixtures
from fixtures_sshd import sshd  # noqa: F401 - fixtures
from fixtures_sshd import sshd_b  # noqa: F401 - fixtures
from metadata_standin import MetadataStandin
from test_first_boot import FAKE_SYSTEMCTL
from test_run_store_resume import STEPS
from test_run_store_resume import _kill_tree
from test_run_store_resume import _latest
from test_run_store_resume import _same_weights
from test_run_store_resume import reclaim
from test_runs import PYTHON
from test_runs import connect
from test_runs import gpudesk
from test_runs import result
from test_runs import run_cmd
from test_runs import training_project
from test_runs import wait_for

from gpudesk.agent import replacement
from gpudesk.agent.bucket_spend import RunBudget
from gpudesk.agent.group_end import GroupRef
from gpudesk.agent.runs import read_pid
from gpudesk.agent.uploader import FINAL_STATES
from gpudesk.agent.uploader import Uploader
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.remote import first_boot
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import IdleStop
from gpudesk.services.remote.host_key_rotation import GUARD_STATUS_NAME
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_package
from gpudesk.services.runs import spot_recovery
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.clients import make_client
from gpudesk.services.storage.uri import StoreUri

ROLE = "gpudesk-run-keep-alive"
REGION = "us-east-1"
WAIT_S = 120.0


def _issue() -> dict[str, str]:
    """The role's short-lived keys, as the metadata service hands them out."""
    expiry = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"Code": "Success", "AccessKeyId": "ASIAKEEPALIVE0000001",
            "SecretAccessKey": "keep-alive/role-secret", "Token": "keep-alive-role-token",
            "Expiration": expiry}


@dataclass
class Machine:
    """One group member's first boot: its home (run root ``<home>/gpudesk``) and stand-ins."""

    home: Path
    fake: Path  # the systemctl stand-in, its log and the unit's pid
    units: Path
    state: Path
    done: Any = None  # the script's result (an SshResult)

    @property
    def root(self) -> Path:
        return self.home / "gpudesk"

    def log(self) -> str:
        path = self.root / "agent" / "data" / "agent.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def marker(self) -> str:
        path = self.state / GUARD_STATUS_NAME
        return path.read_text() if path.exists() else ""

    def events(self) -> list[dict[str, object]]:
        path = self.root / "agent" / "data" / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines(keepends=True)
                if line.endswith("\n")]

    def stop(self) -> None:
        """Everything this machine started: its guard (the unit's process) and its run."""
        unit_pid = self.fake / "unit.pid"
        if unit_pid.exists():
            _kill_tree(int(unit_pid.read_text()))
        _kill_tree(read_pid(self.root / "agent" / "data" / "agent.pid"))
        for pid_file in (self.root / "runs").glob("*/pid"):
            _kill_tree(read_pid(pid_file))


@pytest.fixture
def group(tmp_path: Path, bucket: Bucket, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[tuple[MetadataStandin, list[Machine]]]:
    """The machines' metadata service (the role's keys) and the agents' way to moto; every
    machine made here is stopped afterwards."""
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", bucket.moto.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    monkeypatch.setenv("GPUDESK_STORE_EVERY_S", "0.2")
    for name in ("GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR"):
        monkeypatch.delenv(name, raising=False)
    made: list[Machine] = []
    with MetadataStandin("aws", ROLE, "i-0aaaaaaaaaaaaaaaa", REGION, _issue) as md:
        monkeypatch.setenv("GPUDESK_STORE_METADATA_AWS", md.url)
        try:
            yield md, made
        finally:
            for machine in made:
                machine.stop()
            for root in (tmp_path / "machine-a", tmp_path / "baseline"):
                _kill_tree(read_pid(root / "agent" / "data" / "agent.pid"))
                for pid_file in (root / "runs").glob("*/pid"):
                    _kill_tree(read_pid(pid_file))


def _rules() -> AgentRules:
    """A guard with a budget and an idle rule that this test never reaches."""
    return AgentRules(budget=BudgetStop(cap=50.0, price_per_hour=1.2, since=time.time()),
                      idle=IdleStop(minutes=60.0),
                      commands={"terminate": (PYTHON, "-c", "pass"),
                                "stop": (PYTHON, "-c", "pass")})


def first_boot_of(server: SshdServer, folder: Path, keep_alive: first_boot.KeepAlive,
                  md: MetadataStandin, made: list[Machine], bucket: Bucket) -> Machine:
    """The group starts a machine: cloud-init runs the user data's script once, as root
    would, with systemd, the folders and the metadata service replaced."""
    machine = Machine(folder / "home", folder / "sysbin", folder / "units", folder / "state")
    for d in (machine.home, machine.fake, machine.units):
        d.mkdir(parents=True)
    made.append(machine)
    (machine.fake / "systemctl").write_text(FAKE_SYSTEMCTL.format(python=PYTHON))
    (machine.fake / "systemctl").chmod(0o755)
    data = first_boot.user_data(_rules(), first_boot.new_host_key(), user=getpass.getuser(),
                                keep_alive=keep_alive)
    size, limit = first_boot.user_data_size(keep_alive.cloud, data)
    assert size <= limit
    (script,) = yaml.safe_load(data)["write_files"]  # what cloud-init writes, unchanged
    env = {"GPUDESK_BOOT_HOME": machine.home, "GPUDESK_BOOT_UNIT_DIR": machine.units,
           "GPUDESK_BOOT_SYSTEMCTL": machine.fake / "systemctl",
           "GPUDESK_BOOT_PYTHON": PYTHON, "GPUDESK_BOOT_STATE_DIR": machine.state,
           "GPUDESK_STORE_ENDPOINT_AWS": bucket.moto.endpoint,
           "GPUDESK_STORE_ADDRESSING_AWS": "path", "GPUDESK_STORE_METADATA_AWS": md.url,
           "GPUDESK_STORE_EVERY_S": "0.2"}
    command = "env " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + \
        " bash -s"
    with connect(server) as conn:
        machine.done = conn.exec(command, input=script["content"].encode(), timeout=WAIT_S)
    return machine


def _package(bucket: Bucket, project: Path, out: Path, run_id: str, root: Path,
             ) -> tuple[StoreAccess, runs.RunRequest, run_package.RunPackage]:
    access = StoreAccess(StoreUri("aws", bucket.name), REGION, run_id, role=ROLE)
    request = runs.RunRequest(project, "train.py", ["--out", str(out), *STEPS,
                                                    "--pause-at", "10"],
                              nproc=1, python=PYTHON, root=str(root), run_id=run_id)
    client = make_client("aws", REGION, Credentials("aws", "AKIADESKTOP000000001",
                                                    "desktop-secret"))
    package = run_package.write_package(
        access, request, client=client,
        group=GroupRef("aws", REGION, f"gpudesk-run-{run_id}"),
        budget=RunBudget(50.0, "USD", 1.2), keep=2)
    return access, request, package


def _json(bucket: Bucket, key: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(bucket.read(key))
    return data


def test_a_reclaimed_keep_alive_run_resumes_on_the_groups_next_machine_with_no_desktop(
        sshd: SshdServer, sshd_b: SshdServer, bucket: Bucket, tmp_path: Path,
        group: tuple[MetadataStandin, list[Machine]],
        capsys: pytest.CaptureFixture[str]) -> None:
    md, made = group
    project = training_project(tmp_path / "proj", {".gitignore": "data/\n"})
    (project / "data").mkdir()
    (project / "data" / "big.bin").write_bytes(b"\0" * 4096)  # ignored: never shipped
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, tmp_path / "baseline", project, "--accept-new", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()

    # the launch: the package in the bucket, then the run on machine A as today
    run_id = runs.new_run_id("proj")
    machine_a = tmp_path / "machine-a"
    access, request, package = _package(bucket, project, broken, run_id, machine_a)
    doc = _json(bucket, f"runs/{run_id}/run.json")
    assert doc == package.run_json
    assert (doc["run"], doc["script"], doc["nproc"], doc["python"]) == (
        run_id, "train.py", 1, PYTHON)
    assert doc["project"] == runs.project_folder_name(project)
    assert doc["group"] == {"cloud": "aws", "region": REGION,
                            "group_id": f"gpudesk-run-{run_id}"}
    assert doc["budget"] == {"amount": 50.0, "currency": "USD", "price_per_hour": 1.2}
    code = bucket.read(f"runs/{run_id}/code/project.tar.gz")
    assert doc["code"] == {"key": f"runs/{run_id}/code/project.tar.gz",
                           "sha256": package.code.sha256, "bytes": len(code)}
    with tarfile.open(fileobj=io.BytesIO(code)) as tar:
        assert sorted(tar.getnames()) == [".gitignore", "train.py"]  # as a push sends it
    with connect(sshd) as conn:
        record = runs.launch([conn], [(sshd.url, str(sshd.client_key))], request,
                             store=access)
    wait_for(lambda: (broken / "paused-10-rank0").exists(), "the pause at step 10")
    wait_for(lambda: _latest(bucket, run_id) == "ckpt-000000008.pt",
             "the step-8 checkpoint in the bucket")

    # the reclaim; the desktop is gone from here on (its copies too)
    reclaim(machine_a, run_id)
    shutil.rmtree(spot_recovery.mirror_dir(record), ignore_errors=True)
    runs.RunRecord.path_of(run_id).unlink()
    (broken / "go-10").touch()  # (the resumed run passes step 10 again)

    # the group's next machine boots
    md.instance_id = "i-0bbbbbbbbbbbbbbbb"
    b = first_boot_of(sshd_b, tmp_path / "machine-b", package.keep_alive(), md, made, bucket)
    assert b.done.ok, b.done.stderr.decode(errors="replace")
    assert b.marker() == "installed\n"
    run_dir = b.root / "runs" / run_id
    wait_for(lambda: (run_dir / "exit_status").exists(), "the resumed run's end", WAIT_S)
    log_b = (run_dir / "log").read_text()
    assert (run_dir / "exit_status").read_text().strip() == "0", log_b[-3000:] + b.log()
    assert f"run {run_id} resumed on i-0bbbbbbbbbbbbbbbb from step 8 (ckpt-000000008.pt)" \
        in b.log(), b.log()
    assert "gpudesk: resuming run (attempt 2)" in log_b
    spec = json.loads((run_dir / "run.json").read_text())  # what the launcher started
    assert spec["env"]["GPUDESK_RESUME_FROM"] == str(run_dir / "checkpoints" /
                                                     "ckpt-000000008.pt")
    assert spec["cwd"] == str(b.root / "projects" / str(doc["project"]))
    _same_weights(result(broken), result(whole))
    # the same layout a launch makes; the ignored folder never came
    assert (b.root / "projects" / doc["project"] / "train.py").is_file()
    assert not (b.root / "projects" / doc["project"] / "data").exists()
    assert (b.root / "lib" / "gpudesk" / "training" / "env.py").is_file()
    # the guard is the agent from the bucket, started by the unit at first boot
    unit = (b.units / UNIT).read_text()
    assert f"ExecStart={PYTHON} {b.root}/agent/current/agent --dir" in unit
    assert (b.root / "agent" / "boot" / "gpudesk" / "agent" / "replacement.py").is_file()
    # the story: this machine, resumed from step 8
    entry = _json(bucket, f"runs/{run_id}/machines/i-0bbbbbbbbbbbbbbbb.json")
    assert (entry["why"], entry["resumed_from_step"], entry["checkpoint"]) == (
        "replaced", 8, "ckpt-000000008.pt")
    assert any(e["kind"] == "run-resumed" and e.get("step") == 8 for e in b.events())
    # B's agent carries on as A's did: the last checkpoint and the end reach the bucket
    wait_for(lambda: _latest(bucket, run_id) == "ckpt-000000016.pt",
             "the step-16 checkpoint in the bucket")
    wait_for(lambda: f"runs/{run_id}/state.json" in bucket.keys(f"runs/{run_id}/state"),
             "the run's end in the bucket")
    assert _json(bucket, f"runs/{run_id}/state.json")["state"] == "succeeded"
    assert md.hits.count("PUT /latest/api/token") >= 2  # IMDSv2: the fetch and the agent
    assert not runs.RunRecord.path_of(run_id).exists()  # nothing of the desktop came back
    for path in [*b.root.rglob("*"), *b.state.rglob("*")]:  # the role's keys: memory only
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            assert b"keep-alive/role-secret" not in data and b"keep-alive-role-token" \
                not in data, path

    # a machine the group started late finds the run done and starts nothing
    md.instance_id = "i-0cccccccccccccccc"
    c = first_boot_of(sshd_b, tmp_path / "machine-c", package.keep_alive(), md, made, bucket)
    assert c.done.ok
    wait_for(lambda: "already succeeded" in c.log(), "the late machine's word")
    assert f"run {run_id} already succeeded (exit status 0): not started again" in c.log()
    assert not (c.root / "runs" / run_id / "pid").exists()
    late = _json(bucket, f"runs/{run_id}/machines/i-0cccccccccccccccc.json")
    assert (late["run_state"], late["resumed_from_step"]) == ("succeeded", None)


def test_a_code_archive_that_is_not_run_jsons_is_refused_and_nothing_starts(
        sshd: SshdServer, bucket: Bucket, tmp_path: Path,
        group: tuple[MetadataStandin, list[Machine]]) -> None:
    md, made = group
    project = training_project(tmp_path / "proj")
    run_id = runs.new_run_id("proj")
    _, _, package = _package(bucket, project, tmp_path / "out", run_id, tmp_path / "unused")
    other = io.BytesIO()
    with tarfile.open(fileobj=other, mode="w:gz") as tar:  # someone else's code
        data = b"print('not the run')\n"
        info = tarfile.TarInfo("train.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    bucket.s3.put_object(Bucket=bucket.name, Key=package.code.key, Body=other.getvalue())

    m = first_boot_of(sshd, tmp_path / "machine", package.keep_alive(), md, made, bucket)
    assert m.done.ok and m.marker() == "installed\n"
    wait_for(lambda: "refused" in m.log(), "the refusal in the agent's log")
    got = hashlib.sha256(other.getvalue()).hexdigest()
    assert (f"the code of run {run_id} ({package.code.key}) has SHA-256 {got} but run.json "
            f"says {package.code.sha256}: refused, the run was not started") in m.log()
    assert not (m.root / "runs" / run_id).exists()
    assert not (m.root / "projects" / package.run_json["project"]).exists()
    assert any(e["kind"] == "run-refused" for e in m.events())
    assert f"runs/{run_id}/machines/" not in " ".join(bucket.keys(f"runs/{run_id}/"))


def test_an_agent_bundle_that_is_not_the_user_datas_is_never_unpacked(
        sshd: SshdServer, bucket: Bucket, tmp_path: Path,
        group: tuple[MetadataStandin, list[Machine]]) -> None:
    md, made = group
    project = training_project(tmp_path / "proj")
    run_id = runs.new_run_id("proj")
    _, _, package = _package(bucket, project, tmp_path / "out", run_id, tmp_path / "unused")
    wrong = first_boot.KeepAlive("aws", REGION, bucket.name, package.prefix, ROLE, "0" * 64)
    m = first_boot_of(sshd, tmp_path / "machine", wrong, md, made, bucket)
    assert not m.done.ok
    assert m.marker() == (f"not-installed: runs/{run_id}/boot/agent.tar.gz is not the agent "
                          f"this machine was made for (SHA-256 {package.agent.sha256}, "
                          f"expected {'0' * 64})\n")
    assert not (m.root / "agent" / "boot" / "gpudesk").exists()
    assert not any(m.units.iterdir()) and not (m.fake / "systemctl.log").exists()
    assert any(h.startswith("GET /latest/meta-data/iam/security-credentials/") for h in md.hits)


def test_the_keep_alive_user_data_fits_every_clouds_limit() -> None:
    """Each cloud's documented limit (first_boot.USER_DATA_LIMITS), with a realistic guard:
    budget, idle rule, the instance-role stop command and the spot watcher."""
    key = first_boot.new_host_key()
    for cloud, region, name in (("aws", "us-east-1", "gpudesk-runs-123456789012-us-east-1"),
                                  ("tencent", "ap-guangzhou", "gpudesk-runs-1250000000"),
                                  ("aliyun", "cn-hangzhou", "gpudesk-runs-1234567890123456")):
        stop = ("gpudesk-cloud-stop", "--provider", cloud, "--role",
                "gpudesk-self-stop-0123456789abcdef", "--action")
        rules = AgentRules(budget=BudgetStop(cap=250.0, price_per_hour=3.06, since=time.time(),
                                             spent_before=12.5, action="terminate"),
                           idle=IdleStop(minutes=30.0), spot_provider=cloud,
                           commands={"terminate": (*stop, "terminate"), "stop": (*stop, "stop")})
        keep = first_boot.KeepAlive(cloud, region, name,
                                    "lab/runs/my-long-project-name-20261205-101010-abcd/",
                                    "gpudesk-run-0123456789abcdef", "f" * 64)
        data = first_boot.user_data(rules, key, keep_alive=keep)
        size, limit = first_boot.user_data_size(cloud, data)
        assert size <= limit, (cloud, size, limit)
        assert first_boot.user_data_size(cloud, data)[1] == first_boot.USER_DATA_LIMITS[
            cloud][0]
        assert size <= 8 * 1024, (cloud, size)  # room left for the rules to grow
        script = yaml.safe_load(data)["write_files"][0]["content"]
        assert f'"sha256":"{"f" * 64}"' in script  # what the fetch step checks
    # what is sent is counted: base64 of the gzip on Tencent Cloud, the text on Aliyun
    assert first_boot.user_data_size("tencent", "x" * 3)[0] == len(base64.b64encode(
        gzip.compress(b"xxx", 9, mtime=0)))
    assert first_boot.user_data_size("aliyun", "x" * 3)[0] == 3


def test_the_replacement_starts_the_run_as_a_launch_does() -> None:
    """The machine-side copies of the launch's torchrun command and training environment."""
    for nproc, amp, every in ((1, None, None), (4, "bf16", 2.5), (0, None, 10.0)):
        assert replacement.torchrun_argv("python3", "train.py", ["--lr", "3"], nproc) == \
            runs.torchrun_argv("python3", "train.py", ["--lr", "3"], nproc=nproc)
        assert replacement.training_env("/r/runs/x", "/r/lib", "/r/projects/p", amp=amp,
                                        checkpoint_every_min=every, run_id="x",
                                        host="127.0.0.1", cpu=nproc <= 0) == \
            runs.training_env("/r/runs/x", "/r/lib", "/r/projects/p", amp=amp,
                              checkpoint_every_min=every, run_id="x", nodes=["127.0.0.1"],
                              node_rank=0, cpu=nproc <= 0)


@pytest.mark.parametrize(("exit_status", "cancelled", "spot", "state"), [
    ("0\n", False, False, "succeeded"), ("1\n", False, False, "failed"),
    ("1\n", True, False, "cancelled"), ("143\n", False, False, "killed"),
    ("1\n", False, True, "killed"), (None, False, False, "killed")])
def test_the_uploader_says_how_the_run_ended_and_only_an_end_is_final(
        bucket: Bucket, exit_status: str | None, cancelled: bool, spot: bool,
        state: str) -> None:
    """A shutdown's SIGTERM (exit 143) or a failure during a spot notice is a reclaim, not
    the run's end: the group's next machine resumes it. Without an exit status the run's
    process died with its machine."""
    run = bucket.run()
    (run / "pid").write_text("999999999\n")  # no such process: the run has ended
    if exit_status is not None:
        (run / "exit_status").write_text(exit_status)
    if cancelled:
        (run / "cancelled").write_text("1\n")
    up = Uploader.for_run(run)
    if spot:
        up.state["spot"] = {"time": "2026-12-05T03:00:00Z", "deadline": 0.0}
    up.tick(time.time())
    assert up.done
    end = _json(bucket, "runs/r1/state.json")
    assert (end["run"], end["state"]) == ("r1", state)
    assert (end["state"] in FINAL_STATES) == (state != "killed")
    assert end["code"] == (int(exit_status) if exit_status is not None else None)
