"""Alibaba Cloud like the other clouds: SIGKILL at every launch step, restart, no orphan; and a
whole CLI session (accounts add, launch, ls, stop, start, terminate) leaving no secret behind.

Each run is a real ``gpudesk`` process against the ECS stand-in (GPUDESK_ALIYUN_ENDPOINT),
with its keys in the real Secret Service (scripts/test.sh provides one).
"""

from __future__ import annotations

import json
from pathlib import Path

import launch_fault_harness as harness
import pytest
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import secret_service  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger

LAUNCH = harness.launch_args("aliyun", "ecs.gn7i-c8g1.2xlarge", "cn-hangzhou")


@pytest.fixture
def env(aliyun, gpudesk_home: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]  # noqa: F811
    return harness.cli_env(ALIYUN_ENDPOINT_ENV, aliyun.endpoint, gpudesk_home)


@pytest.mark.parametrize("point", harness.KILL_POINTS)
def test_killed_launch_is_found_after_restart(point, aliyun, aliyun_creds,  # type: ignore[no-untyped-def]  # noqa: F811
                                             secret_service, env) -> None:  # noqa: F811
    credentials.save_credentials(aliyun_creds)
    with Ledger() as ledger:  # the app had these keys set up
        ledger.save_account(Account("aliyun", "LTAI…0123"))
    harness.kill_launch_at(point, LAUNCH, env)
    at_cloud = set(aliyun.state.instances)
    assert len(at_cloud) == harness.machines_expected(point), point

    by_cloud = harness.restart_finds(at_cloud, env, point)
    for cloud_id in at_cloud:
        assert by_cloud[cloud_id]["provider"] == "aliyun"
    assert aliyun.internal_errors == []


def test_whole_session_leaves_no_secret_in_any_file(aliyun, secret_service, env,  # type: ignore[no-untyped-def]  # noqa: F811
                                                    gpudesk_home: Path) -> None:
    steps = [
        (["accounts", "add", "aliyun", "--access-key-id", ACCESS_KEY_ID, "--secret-stdin"],
         ACCESS_KEY_SECRET + "\n"),
        (["accounts", "verify", "aliyun"], ""),
        (["accounts", "list", "--json"], ""),
        (LAUNCH + ["--json"], ""),
        (["ls", "--json"], ""),
    ]
    outputs, launched = harness.run_session(steps, env, ACCESS_KEY_SECRET)
    machine = json.loads(launched)
    assert machine["provider"] == "aliyun" and machine["cloud_id"].startswith("i-")
    # No bundled price: the launch asked DescribePrice (16 CNY/h in the stand-in) first.
    assert machine["price_per_hour"] == round(16.0 / 7.2, 6)
    sent = aliyun.params("RunInstances")[-1]
    assert sent["Tag.1.Key"] == "gpudesk" and sent["Tag.2.Value"] == machine["id"]
    for _ in range(3):  # let the stand-in move it to Running
        harness.listed(env)
    done = harness.gpudesk(["stop", machine["id"], "--yes"], env)
    assert done.returncode == 0, done.stderr
    assert "StopCharging" in done.stdout and "system disk still bills" in done.stdout
    outputs.append(done.stdout + done.stderr)
    done = harness.gpudesk(["terminate", machine["id"], "--yes"], env)
    assert done.returncode == 0, done.stderr
    assert aliyun.state.instances == {}
    assert aliyun.state.groups == {} and aliyun.state.key_pairs == {}  # cleaned up
    # A wrong secret is refused with a clear answer, and changes nothing stored.
    bad = harness.gpudesk(["accounts", "add", "aliyun", "--access-key-id", ACCESS_KEY_ID,
                           "--secret-stdin"], env, harness.WRONG_SECRET + "-1234567890\n")
    assert bad.returncode == 1 and "secret does not match" in bad.stderr
    stored = credentials.load_credentials("aliyun")
    assert stored is not None and stored.secret == ACCESS_KEY_SECRET

    files = harness.assert_no_secret_left(gpudesk_home, ACCESS_KEY_SECRET,
                                          outputs + [bad.stdout, bad.stderr])
    assert any(p.suffix == ".sqlite3" for p in files)
    rows = {r["id"]: r for r in harness.listed(env)}
    assert rows[machine["id"]]["billing"] is False


def test_import_from_aliyun_cli_profiles(tmp_path: Path) -> None:
    """~/.aliyun/config.json: the current profile by default, a named one on request;
    role-only profiles hold no key to import."""
    folder = tmp_path / ".aliyun"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"current": "work", "profiles": [
        {"name": "default", "mode": "AK", "access_key_id": "LTAI5tDefault000000000",
         "access_key_secret": "sec-default", "region_id": "cn-hangzhou"},
        {"name": "work", "mode": "StsToken", "access_key_id": "STS.work",
         "access_key_secret": "sec-work", "sts_token": "tok"},
        {"name": "role", "mode": "EcsRamRole", "ram_role_name": "r"}]}), encoding="utf-8")
    current = credentials.aliyun_profile(home=tmp_path)
    assert (current.provider, current.key_id, current.session_token) == (
        "aliyun", "STS.work", "tok")
    assert credentials.aliyun_profile("default", home=tmp_path).secret == "sec-default"
    with pytest.raises(credentials.CredentialError) as info:
        credentials.aliyun_profile("role", home=tmp_path)
    assert "'role'" in info.value.message() and "config.json" in info.value.message()
