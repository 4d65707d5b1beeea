"""The Launch dialog's Image field (issue 31 item 5), clicked in the window against moto and
the Alibaba Cloud stand-in (over HTTP): a failed automatic image is said under the Image
field, which is marked and focused; a typed image is said, before the launch, to be started
without a driver check (Alibaba Cloud's plain public Ubuntu: the driver installed at first
boot, and it is); the field's hint follows the provider's image id form; ``launch --image``
says the same words."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtWidgets import QMessageBox

from gpudesk.cli.entry import main as cli_main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import image_choice
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 30000
PLAIN = "ubuntu_22_04_x64_20G_alibase_20250101.vhd"  # the stand-in's public plain Ubuntu
OWN_AMI = "ami-0c0ffee0000000001"


@pytest.fixture
def window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]
    credentials.save_credentials(aws.credentials)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def open_launch(window: MainWindow) -> LaunchDialog:
    select_offer(window, "g4dn.xlarge", "us-east-1")
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    return dialog


def test_a_failed_automatic_image_is_said_at_the_image_field(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = open_launch(window)
    assert dialog.image.placeholderText() == "automatic: AWS Deep Learning AMI (or ami-…)"
    assert "ami-0123456789abcdef0" in dialog.image.toolTip()
    assert "m-" not in dialog.image.toolTip() and "img-" not in dialog.image.toolTip()
    assert not dialog.image_note.isVisibleTo(dialog)
    dialog.launch_button.click()  # moto has no Deep Learning AMI here: refused
    qtbot.waitUntil(lambda: dialog.failure_box is not None and dialog.failure_box.isVisible(),
                    timeout=WAIT_MS)
    box = dialog.failure_box
    assert box is not None
    box.button(QMessageBox.StandardButton.Ok).click()
    # the field right above the words is named, marked and focused
    note = dialog.image_note.text()
    assert note.startswith("Image: ") and "GPU deep-learning image" in note
    assert dialog.log.text() == note
    assert dialog.image_note.isVisibleTo(dialog) and dialog.image_note.property("error")
    assert dialog.image.property("invalid") is True
    assert dialog.focusWidget() is dialog.image  # (the window is not active offscreen)
    # an id typed there: no longer marked, and said to be started without a driver check
    qtbot.keyClicks(dialog.image, OWN_AMI)
    assert dialog.image.property("invalid") is False
    assert dialog.image_note.text() == (
        f"{OWN_AMI} is started as it is: gpudesk does not check it for a GPU driver. On an "
        "image without one (a plain Ubuntu) the GPU cannot be used until you install the "
        "NVIDIA driver; leave Image empty for AWS's GPU image.")
    assert not dialog.image_note.property("error")
    dialog.image.clear()
    assert not dialog.image_note.isVisibleTo(dialog)


def aliyun_dialog(qtbot) -> LaunchDialog:  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    offer = next(o for o in catalog.offers if o.provider == "aliyun")

    async def never(*_a: Any, **_k: Any) -> Any:  # the field is judged before any launch
        raise AssertionError("not launched in this test")

    dialog = LaunchDialog(offer, catalog, never, detect=False)  # type: ignore[arg-type]
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_alibaba_image_hint_and_a_plain_ubuntu_gets_the_driver_word(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = aliyun_dialog(qtbot)
    tip = dialog.image.toolTip()
    assert "ubuntu_22_04_x64_20G_alibase_20240926.vhd" in tip and "m-xxxxxxxx" in tip
    assert "ami-" not in tip and "img-" not in tip
    assert "alibase" in dialog.image.placeholderText()
    qtbot.keyClicks(dialog.image, PLAIN)
    assert dialog.image_note.isVisibleTo(dialog)
    assert dialog.image_note.text() == (
        f"{PLAIN} is a plain Ubuntu image without a GPU driver: gpudesk installs the driver "
        f"at first boot, as the console's auto-install does. It takes about "
        f"{image_choice.DRIVER_INSTALL_MINUTES} minutes or more after SSH answers; a GPU run "
        "started before then finds no driver.")
    # a kept-alive group's members get the driver too (aliyun_keep_alive._with_driver)
    said = dialog.image_note.text()
    dialog.spot.click()
    dialog.keep_alive.click()
    assert dialog.keep_alive.isChecked()
    assert dialog.image_note.text() == said
    dialog.keep_alive.click()
    dialog.image.clear()
    qtbot.keyClicks(dialog.image, "m-bp1abcdefgh")
    assert "is started as it is: gpudesk does not check it for a GPU driver" in \
        dialog.image_note.text()


@pytest.fixture
def aliyun_provider(aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring,  # type: ignore[no-untyped-def]
                    gpudesk_home: Path, monkeypatch: pytest.MonkeyPatch
                    ) -> Callable[[str], AliyunProvider]:
    credentials.save_credentials(aliyun_creds)
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    return lambda _name: provider


def test_a_typed_plain_alibaba_ubuntu_image_gets_the_driver_at_first_boot(
        aliyun: AliyunStandin, aliyun_provider: Callable[[str], AliyunProvider]) -> None:
    plan = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                      region="cn-hangzhou", allow_from="203.0.113.7/32", gpu="A10", gpus=1,
                      price_per_hour=2.0, disk_gb=100, wait_ssh=False, image_id=PLAIN)
    with Ledger() as ledger:
        launcher = Launcher(ledger, aliyun_provider, poll_s=0.0,  # type: ignore[arg-type]
                            first_boot=lambda _m: ("#cloud-config\n", ""))
        asyncio.run(launcher.launch(plan))
    (sent,) = aliyun.params("RunInstances")
    assert sent["ImageId"] == PLAIN  # the typed image, as typed
    user_data = base64.b64decode(sent["UserData"]).decode()
    assert 'auto_install_script="auto_install_v4.0.sh"' in user_data  # the driver install


def test_cli_launch_image_says_the_same_word(aws: MotoAws, memory_keyring: Any) -> None:
    credentials.save_credentials(aws.credentials)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli_main(["launch", "--provider", "aws", "--type", "g4dn.xlarge", "--region",
                  "us-east-1", "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll",
                  "0.01", "--no-instance-role", "--store", "none", "--image", OWN_AMI])
    assert (f"gpudesk: {OWN_AMI} is started as it is: gpudesk does not check it for a GPU "
            "driver.") in err.getvalue()
