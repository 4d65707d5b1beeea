"""The Instances page's "Allow my new address", against the Tencent stand-in (real SDK).

This computer's public address comes from a local echo server (GPUDESK_IP_ECHO_URL),
as it would from checkip.amazonaws.com.
"""

from __future__ import annotations

import pytest
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_page import InstancesPage

OLD = "203.0.113.7/32"
NEW = "198.51.100.77"
REGION = "ap-guangzhou"


@pytest.fixture
def echo(echo: list[str]) -> list[str]:  # this computer has moved to NEW
    echo[0] = NEW + "\n"
    return echo


@pytest.fixture
def machine(tencent, tencent_creds, memory_keyring, monkeypatch, gpudesk_home):  # type: ignore[no-untyped-def]  # noqa: F811
    """A running gpudesk machine whose group opens SSH to the old address."""
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    provider = provider_from_keyring("tencent")
    group = provider.ensure_machine_group(REGION, "m-0000000001", OLD)  # type: ignore[attr-defined]
    inst = provider.run_instance(LaunchRequest("m-0000000001", REGION, "GN7.2XLARGE32",
                                               zone="ap-guangzhou-3", security_group=group))
    ledger = Ledger()
    ledger.add(Machine(id="m-0000000001", provider="tencent", region=REGION,
                       instance_type="GN7.2XLARGE32", cloud_id=inst.cloud_id, state="running",
                       security_group=group, name="trainer", public_ip="198.51.100.10"))
    yield ledger, group
    ledger.close()


def test_allow_my_new_address_button(qtbot, loop, tencent, machine, echo) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ledger, group = machine
    page = InstancesPage(ledger)
    qtbot.addWidget(page)
    page.select_machine("m-0000000001")
    button = page.findChild(type(page.refresh_button), "allowMe")
    assert button is not None and button.isEnabled()
    button.click()
    qtbot.waitUntil(lambda: "now open to" in page.status.text(), timeout=10000)
    assert page.status.text() == (f"SSH to trainer is now open to {NEW}/32 only (was {OLD}).")
    cidrs = [r["CidrBlock"] for r in tencent.state.groups[group]["Ingress"]]
    assert cidrs == [f"{NEW}/32"]
    button.click()  # same address again: nothing to change, and the page says so
    qtbot.waitUntil(lambda: "already open" in page.status.text(), timeout=10000)
    assert [r["CidrBlock"] for r in tencent.state.groups[group]["Ingress"]] == [f"{NEW}/32"]
    page.show_ended.setChecked(True)
    ledger.update("m-0000000001", state="terminated")
    page.reload()
    page.select_machine("m-0000000001")
    assert not button.isEnabled()


def test_a_failed_ssh_offers_the_new_address_once(qtbot, loop, tencent, machine, echo) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """What the Watch page does when its feed to a cloud machine fails."""
    from PySide6.QtWidgets import QMessageBox
    from PySide6.QtWidgets import QWidget

    from gpudesk.ui.widgets.allow_me_offer import AllowMeOffer

    ledger, group = machine
    owner = QWidget()
    qtbot.addWidget(owner)
    offer = AllowMeOffer(ledger, owner)
    said: list[str] = []
    offer.said.connect(said.append)
    offer.ssh_failed("m-0000000001")
    qtbot.waitUntil(lambda: offer.question is not None, timeout=10000)
    box = owner.findChild(QMessageBox, "allowMeQuestion")
    assert box is not None and f"({NEW}/32)" in box.text() and f"({OLD})" in box.text()
    box.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: bool(said), timeout=10000)
    assert said == [f"SSH to trainer is now open to {NEW}/32 only."]
    assert [r["CidrBlock"] for r in tencent.state.groups[group]["Ingress"]] == [f"{NEW}/32"]
    offer.ssh_failed("m-0000000001")  # asked once per machine per session
    assert offer.question is None and not offer.check_runner.busy


def test_no_offer_when_the_address_is_not_why(qtbot, loop, tencent, machine, echo) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from PySide6.QtWidgets import QWidget

    from gpudesk.ui.widgets.allow_me_offer import AllowMeOffer

    ledger, _group = machine
    echo[0] = OLD.split("/")[0] + "\n"  # this computer still has the address the rule names
    owner = QWidget()
    qtbot.addWidget(owner)
    offer = AllowMeOffer(ledger, owner)
    offer.ssh_failed("m-0000000001")
    qtbot.waitUntil(lambda: not offer.check_runner.busy, timeout=10000)
    assert offer.question is None
    assert offer.check_runner.last_error is None  # it asked the cloud and found them equal
