"""The disk a job needs (issue 32, "Disk that fits"): data + checkpoints kept (and the one
being written) + the environment + headroom, in the disk field's GB (2^30 bytes); one
checkpoint's size from ``calc.sizing``; a dataset's size kept at push time, or read from
its manifest in the bucket (moto's S3 server over HTTP) where this computer has none."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture

from gpudesk.calc import sizing
from gpudesk.cli.entry import main
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.core.files import read_json_object
from gpudesk.services.core.files import write_json_object
from gpudesk.services.plan import disk_plan
from gpudesk.services.plan.disk_plan import GIB
from gpudesk.services.plan.disk_plan import DiskPlanError
from gpudesk.services.plan.disk_plan import DiskTooSmall
from gpudesk.services.plan.disk_plan import disk_need
from gpudesk.services.storage import dataset_registry
from gpudesk.services.storage import datasets

LLAMA = sizing.preset("llama-2-7b")
PARAMS = LLAMA.parameter_count()  # 6,738,415,616


def test_the_parts_add_up_with_the_checkpoint_being_written() -> None:
    need = disk_need(data_bytes=42 * GIB, checkpoints_kept=3, checkpoint_size=26 * GIB)
    assert need.checkpoints_on_disk == 4  # 3 kept + the next one before the oldest goes
    assert need.checkpoints_bytes == 104 * GIB
    assert need.environment_bytes == 30 * GIB
    # 10 % of 42 + 104 + 30 = 176 GiB
    assert need.headroom_bytes == int(17.6 * GIB) + 1
    assert need.total_bytes == 42 * GIB + 104 * GIB + 30 * GIB + need.headroom_bytes
    assert need.gb == 194  # 193.6 GiB, rounded up: never a disk short of the bytes
    assert str(need.parts()) == (
        "data 42.0 GB + 4 checkpoints × 26.0 GB (3 kept, 1 being written) + environment "
        "30.0 GB (an estimate) + headroom 17.6 GB = 194 GB")
    assert str(need.said()).startswith("Disk needed: data 42.0 GB + 4 checkpoints")
    assert need.to_json()["disk_gb"] == 194 and need.to_json()["environment_is_estimate"]


def test_parts_without_data_or_checkpoints_say_only_what_is_there() -> None:
    assert str(disk_need(data_bytes=150 * GIB).parts()) == (
        "data 150.0 GB + environment 30.0 GB (an estimate) + headroom 18.0 GB = 198 GB")
    assert str(disk_need(checkpoints_kept=1, checkpoint_size=10 * GIB).parts()) == (
        "2 checkpoints × 10.0 GB (1 kept, 1 being written) + environment 30.0 GB (an "
        "estimate) + headroom 5.0 GB = 55 GB")
    bare = disk_need()
    assert str(bare.parts()) == ("environment 30.0 GB (an estimate) + headroom 3.0 GB "
                                 "= 33 GB")
    # kept checkpoints of no known size take no room, and none kept take none
    assert disk_need(checkpoints_kept=3).checkpoints_bytes == 0
    assert disk_need(checkpoint_size=10 * GIB).checkpoints_bytes == 0
    # the dialog's smallest disk is 30 GB: never asked for less
    assert bare.disk_gb == 33 and disk_plan.DiskNeed(environment_bytes=0).disk_gb == 30


def test_a_disk_too_small_is_refused_with_the_numbers() -> None:
    need = disk_need(data_bytes=42 * GIB, checkpoints_kept=3, checkpoint_size=26 * GIB)
    need.check(194)
    need.check(4000)
    with pytest.raises(DiskTooSmall) as caught:
        need.check(193)
    assert caught.value.message() == (
        "A 193 GB disk is too small for this job: data 42.0 GB + 4 checkpoints × 26.0 GB "
        "(3 kept, 1 being written) + environment 30.0 GB (an estimate) + headroom 17.6 GB "
        "= 194 GB. Choose a bigger disk (at least 194 GB).")
    assert caught.value.translation_context == "DiskPlan"


@pytest.mark.parametrize("kept", [-1, 1001, True])
def test_checkpoints_kept_out_of_range_are_refused(kept: int) -> None:
    with pytest.raises(DiskPlanError, match="whole number from 0 to 1000"):
        disk_need(checkpoints_kept=kept)


@pytest.mark.parametrize("gb", [-1.0, float("nan"), float("inf")])
def test_a_size_below_zero_or_not_a_number_is_refused(gb: float) -> None:
    with pytest.raises(DiskPlanError, match="at least 0"):
        disk_plan.gb_bytes(gb)
    with pytest.raises(DiskPlanError):
        disk_need(data_bytes=-1)


def test_a_checkpoint_is_the_trainable_weights_and_the_optimizer_state() -> None:
    # mixed precision (torch.autocast): fp32 weights 4 + Adam's two fp32 moments 8 bytes
    assert disk_plan.checkpoint_bytes(LLAMA, sizing.Setup()) == 12 * PARAMS
    # bf16 weights 2 + two bf16 moments 4
    assert disk_plan.checkpoint_bytes(LLAMA, sizing.Setup(precision="bf16")) == 6 * PARAMS
    # plain SGD keeps no state: the weights alone
    assert disk_plan.checkpoint_bytes(LLAMA, sizing.Setup(precision="bf16",
                                                          optimizer="sgd")) == 2 * PARAMS
    # the whole model whatever the sharding: 8 GPUs under ZeRO-3 save what one GPU holds
    assert disk_plan.checkpoint_bytes(LLAMA, sizing.Setup(gpus=8, zero=3)) == 12 * PARAMS
    # LoRA: the adapter and its optimizer state, no frozen base
    lora = sizing.Setup(finetune="lora")
    trainable = sizing.estimate(LLAMA, lora).trainable_params
    assert 0 < trainable < PARAMS // 100
    assert disk_plan.checkpoint_bytes(LLAMA, lora) == 12 * trainable
    assert disk_plan.checkpoint_bytes(LLAMA, sizing.Setup(mode="inference")) == 0


@pytest.fixture
def account(bucket: Bucket, memory_keyring: object) -> Bucket:
    save_credentials(bucket.moto.credentials)
    return bucket


def test_a_push_keeps_the_size_and_one_pushed_elsewhere_is_read_from_its_manifest(
        account: Bucket, tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "a.bin").write_bytes(b"a" * 5000)
    (folder / "b.bin").write_bytes(b"b" * 3000)
    assert main(["data", "push", str(folder), "mini", "--store",
                 f"s3://{account.name}/lab"]) == 0
    assert dataset_registry.known_bytes() == {"mini": 8000}
    assert datasets.size_of("mini") == 8000
    # this computer forgets the size (a registry from before sizes were kept): the
    # manifest in the bucket says it, and it is kept from then on
    path = dataset_registry.registry_path()
    registry = read_json_object(path)
    del registry["mini"]["bytes"]
    write_json_object(path, registry)
    assert dataset_registry.known_bytes() == {}
    assert dataset_registry.known()["mini"][0].endswith("/lab/")
    assert datasets.size_of("mini") == 8000
    assert dataset_registry.known_bytes() == {"mini": 8000}


def test_gpudesk_size_says_one_checkpoints_size_for_launch(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "--model", "llama-2-7b", "--precision", "bf16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["checkpoint_bytes"] == 6 * PARAMS
    assert main(["size", "--model", "llama-2-7b", "--precision", "bf16"]) == 0
    assert ("  one checkpoint on disk: 37.7 GB (trainable weights + optimizer state; gpudesk "
            "launch --checkpoint-gb)") in capsys.readouterr().out
    assert main(["size", "--model", "gpt2", "--mode", "inference", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint_bytes"] == 0
