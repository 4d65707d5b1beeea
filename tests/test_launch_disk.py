"""``gpudesk launch --data NAME`` (issue 32, "Disk that fits") against moto's EC2 over HTTP:
the disk defaults to what the dataset, the checkpoints kept and the environment need, and
a ``--disk-gb`` smaller than that is refused with the numbers before anything is written
or asked. Without ``--data`` the disk is ``--disk-gb`` or 100 GB, as before."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.plan.disk_plan import GIB
from gpudesk.services.storage import dataset_registry
from gpudesk.services.storage.uri import parse_uri

LAUNCH = ["launch", "--provider", "aws", "--type", "g4dn.xlarge", "--region", "us-east-1",
          "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01",
          "--no-instance-role", "--store", "none"]
NEED = ("data 150.0 GB + environment 30.0 GB (an estimate) + headroom 18.0 GB = 198 GB")


@pytest.fixture
def cloud(aws: MotoAws, memory_keyring: Any) -> MotoAws:
    """moto with a Deep Learning AMI, the keys in the keyring, and a 150 GiB dataset this
    computer pushed (its size kept at push time)."""
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    dataset_registry.remember("imagenet-mini", parse_uri("s3://my-lab-data/lab"), "us-east-1",
                      150 * GIB)
    return aws


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _nothing_made(cloud: MotoAws) -> None:
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []  # no intent row either
    assert cloud.instance_count() == 0
    assert cloud.client("ec2").describe_key_pairs()["KeyPairs"] == []


def test_a_disk_too_small_for_the_data_is_refused_with_the_numbers(cloud: MotoAws) -> None:
    code, out, err = _run([*LAUNCH, "--data", "imagenet-mini", "--disk-gb", "100"])
    assert code == 2 and out == ""
    assert f"gpudesk: Disk needed: {NEED}" in err
    assert (f"gpudesk: error: A 100 GB disk is too small for this job: {NEED}. Choose a "
            "bigger disk (at least 198 GB).") in err
    _nothing_made(cloud)


def test_the_disk_defaults_to_what_the_data_and_checkpoints_need(cloud: MotoAws) -> None:
    code, out, err = _run([*LAUNCH, "--data", "imagenet-mini", "--checkpoints-kept", "2",
                           "--checkpoint-gb", "1.5", "--json"])
    assert code == 0, err
    # 150 + 3 × 1.5 + 30 = 184.5 GiB, + 10 % = 202.95 -> 203 GB
    assert ("Disk needed: data 150.0 GB + 3 checkpoints × 1.5 GB (2 kept, 1 being written) + "
            "environment 30.0 GB (an estimate) + headroom 18.5 GB = 203 GB") in err
    machine = json.loads(out)
    with Ledger() as ledger:
        (m,) = ledger.machines(include_ended=True)
    assert m.id == machine["id"] and m.disk_gb == 203
    volumes = cloud.client("ec2").describe_volumes()["Volumes"]
    assert [v["Size"] for v in volumes] == [203]  # the root volume the cloud was asked for


def test_a_larger_disk_given_is_kept(cloud: MotoAws) -> None:
    code, _, err = _run([*LAUNCH, "--data", "imagenet-mini", "--disk-gb", "500"])
    assert code == 0, err
    with Ledger() as ledger:
        (m,) = ledger.machines(include_ended=True)
    assert m.disk_gb == 500


def test_without_data_nothing_changes(cloud: MotoAws) -> None:
    code, _, err = _run(LAUNCH)
    assert code == 0, err
    assert "Disk needed" not in err
    with Ledger() as ledger:
        (m,) = ledger.machines(include_ended=True)
    assert m.disk_gb == 100


@pytest.mark.parametrize(("args", "says"), [
    (["--data", "never-pushed"], "No dataset named never-pushed is known here"),
    (["--data", "../etc"], "is not a dataset name"),
    (["--data", "imagenet-mini", "--checkpoints-kept", "2"],
     "--checkpoints-kept needs --checkpoint-gb"),
    (["--data", "imagenet-mini", "--checkpoints-kept", "2", "--checkpoint-gb", "-3"],
     "A size must be a number of GB of at least 0"),
])
def test_bad_disk_input_launches_nothing(cloud: MotoAws, args: list[str], says: str) -> None:
    code, out, err = _run([*LAUNCH, *args])
    assert code == 2 and out == ""
    assert says in err, err
    _nothing_made(cloud)
