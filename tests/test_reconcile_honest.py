"""Honest reconcile: a locked keyring, keys gone, or a cloud that does not answer is a
visible warning naming the account, never "Up to date"."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import keyring
import keyring.errors
import pytest
from fixtures_keyring import MemoryKeyring  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.instances_page import InstancesPage


class LockedKeyring(MemoryKeyring):
    """A Secret Service whose collection is locked: every read is refused."""

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("the collection is locked")


@pytest.fixture
def locked() -> Any:
    before = keyring.get_keyring()
    keyring.set_keyring(LockedKeyring())
    yield
    keyring.set_keyring(before)


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger(tmp_path / "l.sqlite3") as led:
        led.save_account(Account("aws", "AKIA…0001", account="123456789012", can_launch=True))
        led.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id="i-1",
                        state="running", price_per_hour=1.0))
        yield led


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_locked_keyring_is_a_warning_naming_the_account(locked: None, ledger: Ledger) -> None:
    report = asyncio.run(reconcile(ledger))
    assert list(report.errors) == ["aws"]
    text = report.errors["aws"].message()
    assert text.startswith("AWS account 123456789012 (AKIA…0001): not checked, the keyring")
    assert "KeyringLocked" in text and "billing unseen" in text
    assert "tencent" not in report.errors  # no account there: nothing to warn about


def test_keys_gone_from_the_keyring_are_a_warning(memory_keyring: MemoryKeyring,  # noqa: F811
                                                  ledger: Ledger) -> None:
    report = asyncio.run(reconcile(ledger))
    assert "no longer in the keyring" in report.errors["aws"].message()


def test_instances_page_never_says_up_to_date_when_a_cloud_did_not_answer(
        qtbot: Any, loop: Any, memory_keyring: MemoryKeyring,  # noqa: F811
        ledger: Ledger) -> None:
    from gpudesk.services.cloud import credentials

    credentials.save_credentials(Credentials("aws", "AKIAGPUDESKTEST00001", "s" * 40))
    dead = f"http://127.0.0.1:{_closed_port()}"

    def providers(name: str) -> Any:
        return AwsProvider(Credentials("aws", "AKIAGPUDESKTEST00001", "s" * 40),
                           endpoint_url=dead, max_attempts=1)

    page = InstancesPage(ledger, providers)  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.refresh_button.click()
    qtbot.waitUntil(lambda: page.last_report is not None, timeout=20000)
    status = page.findChild(type(page.status), "instancesStatus")
    assert status is not None
    assert "Up to date" not in status.text()
    assert status.text().startswith("AWS account 123456789012 (AKIA…0001) not checked:")
    assert status.property("warning") is True


def test_a_machine_stopped_but_still_charged_is_reported_billing(
        tmp_path: Path, tencent: TencentStandin,  # noqa: F811
        tencent_creds: Credentials) -> None:  # noqa: F811
    """A tagged CVM machine the ledger never heard of, shut down from inside (the agent):
    CVM keeps charging it, so reconcile adopts it as billing, not as a free stopped one."""
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    group = provider.ensure_security_group("ap-guangzhou", "203.0.113.7")
    inst = provider.run_instance(LaunchRequest(
        ledger_id="m-lost000001", region="ap-guangzhou", instance_type="GN7.2XLARGE32",
        zone="ap-guangzhou-3", security_group=group))
    tencent.shutdown_inside(inst.cloud_id)
    with Ledger(tmp_path / "l.sqlite3") as led:
        report = asyncio.run(reconcile(led, lambda _n: provider, names=["tencent"]))
        assert report.adopted == ["m-lost000001"] and not report.errors
        (row,) = report.billing
        assert (row.state, row.stopped_mode, row.billing) == ("stopped", "KEEP_CHARGING", True)
        assert row.running_since is not None  # billed on: the spend keeps counting
    provider.close()
