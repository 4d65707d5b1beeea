"""A key check that means something: "could not check" is kept and shown as such, in the
ledger, `accounts list --json` and the Accounts page (Tencent stand-in, real SDK)."""

from __future__ import annotations

import json

from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import SECRET_ID  # noqa: F401
from fixtures_tencent import SECRET_KEY  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.machines.accounts_page import AccountsPage


def test_the_ledger_keeps_could_not_check_apart_from_no(gpudesk_home) -> None:  # type: ignore[no-untyped-def]
    with Ledger() as ledger:
        ledger.save_account(Account("aws", "AKIA…1234", can_launch=False, launch_checked=False))
        ledger.save_account(Account("tencent", "AKID…abcd", can_launch=False))
        got = {a.provider: (a.can_launch, a.launch_checked) for a in ledger.accounts()}
    assert got == {"aws": (False, False), "tencent": (False, True)}


def test_could_not_check_in_the_cli_and_the_window(qtbot, loop, tencent, memory_keyring,  # type: ignore[no-untyped-def]  # noqa: F811
                                                   monkeypatch, gpudesk_home, capsys) -> None:
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    # Every zone sold out: no complete dry run can be made, so nothing is claimed.
    for zone in ("ap-beijing-5", "ap-beijing-6", "ap-beijing-7"):
        for itype in ("GN7.2XLARGE32", "GN7.20XLARGE320", "GN10Xp.2XLARGE40",
                      "GN10Xp.20XLARGE320", "GT4.4XLARGE96", "GT4.41XLARGE948",
                      "PNV4.7XLARGE116", "PNV4.56XLARGE932"):
            tencent.sell_out(zone, itype)
    with Ledger() as ledger:
        page = AccountsPage(ledger)
        qtbot.addWidget(page)
        box = page.tencent
        box.key_id.setText(SECRET_ID)
        box.secret.setText(SECRET_KEY)
        box.save_button.click()
        qtbot.waitUntil(lambda: box.status.property("state") == "ok", timeout=10000)
        assert "could not be checked" in box.status.text()
        assert "may not launch" not in box.status.text()
        assert tencent.calls["RunInstances"] == 0  # no half-made dry run was sent
    assert main(["accounts", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["provider"] == "tencent" and row["can_launch"] is None
