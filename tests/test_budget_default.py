"""A budget by default (issue 29, item 2): no launch without a budget unless the user chose
none on purpose. Preferences' default is a day of the machine at its price (a fixed amount
there replaces it); an old settings file whose 0 meant "no budget" gets the day too.
``gpudesk launch`` with no budget flag launches with it against moto and the Tencent
stand-in, ``show --json`` says it, and launch prints the Launch dialog's own guard
sentences; ``--no-budget`` is the only way to none, said with its risk. The Launch dialog,
clicked: the field starts from Preferences, "No budget" turns the words red and launches
with none, and unticked it launches with the default."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QDoubleSpinBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from tencent_standin import TencentStandin

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.core import paths
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import load_settings
from gpudesk.services.core.settings import save_settings
from gpudesk.services.money import default_budget
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow
from gpudesk.ui.shell.settings_dialog import SettingsDialog

AWS_TYPE, AWS_REGION = "g4dn.xlarge", "us-east-1"
LAUNCH = ["launch", "--provider", "aws", "--type", AWS_TYPE, "--region", AWS_REGION,
          "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01",
          "--no-instance-role"]
CVM_TYPE, CVM_ZONE = "GN7.2XLARGE32", "ap-guangzhou-3"
QUOTED_CNY = 7.43  # CVM's own quote; the bundled catalog says 1.209 USD/h (8.7 CNY/h)
WAIT_MS = 30000
RED = "#d32f2f"


def _catalog_price(provider: str, instance_type: str, region: str) -> float:
    offer = next(o for o in load_catalog().filter(provider=provider, region=region)
                 if o.instance_type == instance_type)
    assert offer.ondemand_price
    return float(offer.ondemand_price)


# ---------------------------------------------------------------- Preferences' default


def test_the_default_is_a_day_of_the_machine_and_a_fixed_amount_replaces_it() -> None:
    s = Settings()
    assert (s.machine_budget_usd, s.machine_budget_hours) == (0.0, 24.0)
    day = default_budget.of_settings(s)
    assert day.amount(1.5) == pytest.approx(36.0) and day.plan_hours() == 24.0
    assert day.amount(0.0) is None  # the price is not known yet: hours of the cloud's quote
    fixed = default_budget.of_settings(Settings(machine_budget_usd=40.0,
                                                machine_budget_hours=48.0))
    assert fixed.amount(1.5) == 40.0 and fixed.amount(0.0) == 40.0
    assert fixed.plan_hours() == 0.0  # a fixed amount is a budget of its own
    assert default_budget.of_settings(Settings(machine_budget_hours=6.0)).amount(2.0) == 12.0


def test_an_old_file_whose_0_meant_no_budget_gets_a_day() -> None:
    paths.settings_file().write_text(json.dumps(
        {"version": 1, "machine_budget_usd": 0, "budget_action": "stop",
         "currency": "CNY"}), encoding="utf-8")
    loaded = load_settings()
    assert (loaded.machine_budget_usd, loaded.machine_budget_hours) == (0.0, 24.0)
    assert default_budget.of_settings(loaded).amount(0.526) == pytest.approx(24 * 0.526)
    save_settings(Settings(machine_budget_usd=40.0, machine_budget_hours=12.5))
    again = load_settings()  # a fixed amount and the hours both survive a round trip
    assert (again.machine_budget_usd, again.machine_budget_hours) == (40.0, 12.5)
    assert json.loads(paths.settings_file().read_text())["machine_budget_hours"] == 12.5


@pytest.mark.parametrize("value", [0, -1.0, "24", True, None, float("inf"), 1e6])
def test_hours_that_are_no_budget_fall_back_to_a_day(value: object,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    paths.settings_file().write_text(json.dumps({"version": 1, "machine_budget_hours": value},
                                                allow_nan=True), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        loaded = load_settings()
    assert loaded.machine_budget_hours == 24.0
    assert "machine_budget_hours" in caplog.text


# ---------------------------------------------------------------- gpudesk launch


@pytest.fixture
def cloud(aws: MotoAws, memory_keyring: Any) -> MotoAws:
    """moto with a Deep Learning AMI, and the keys in the keyring the launcher reads."""
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(AWS_REGION)
    return aws


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _show(ledger_id: str) -> dict[str, Any]:
    code, out, err = _run(["show", ledger_id, "--json"])
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _launched_id(out: str) -> str:
    return out.split()[0]


def test_launch_with_no_budget_flag_has_a_day_and_says_who_enforces_it(
        cloud: MotoAws, qtbot: Any) -> None:
    price = _catalog_price("aws", AWS_TYPE, AWS_REGION)
    code, out, err = _run(LAUNCH)
    assert code == 0, err
    assert (f"Budget {24 * price:.2f} USD: 24 hours of the machine at {price:g} USD/h (the "
            "default in Preferences).") in err  # said before anything bills
    shown = _show(_launched_id(out))
    assert shown["price_per_hour"] == price
    assert shown["guard"]["budget"] == pytest.approx(24 * price, rel=1e-9)
    assert shown["guard"]["action"] == "stop"
    assert shown["guard"]["enforced_by"] == ["agent", "shutdown-behavior"]
    # launch prints show's sentences, word for word, and the budget in the ledger's USD
    assert f"  budget: {24 * price:.2f} USD, then stop" in out.splitlines()
    for line in shown["guard_says"]:
        assert f"  {line}" in out.splitlines(), (line, out)
    budget = f"{24 * price:.2f} USD"
    assert (f"At {budget} the machine's agent shuts it down and EC2 stops it (shutdown "
            "behaviour: stop).") in out
    assert f"While gpudesk runs, it also stops the machine through the cloud's API at " \
        f"{budget}." in out
    assert "No budget" not in out + err
    # ...which are the Launch dialog's own words for the same offer and default
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="aws", region=AWS_REGION)
                 if o.instance_type == AWS_TYPE)

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    dialog = LaunchDialog(offer, catalog, never, detect=False)
    qtbot.addWidget(dialog)
    said = dialog.findChild(QLabel, "guardText")
    assert said is not None
    before_role = [x for x in shown["guard_says"] if not x.startswith(
        instance_role.MSG_NO_ROLE.split("{", 1)[0])]
    assert len(before_role) == 3  # the stop, the stopped disk's cost, the desktop's stop
    assert any(x.startswith("Stopped, that disk costs about ") for x in before_role)
    for line in before_role:  # the role's words come once the machine exists
        assert line in said.text(), (line, said.text())


def test_launch_json_carries_the_guard(cloud: MotoAws) -> None:
    code, out, err = _run([*LAUNCH, "--json"])
    assert code == 0, err
    data = json.loads(out)
    shown = _show(data["id"])
    assert data["guard"]["budget"] == shown["guard"]["budget"] == pytest.approx(
        24 * data["price_per_hour"])
    assert data["guard_says"] == shown["guard_says"]


def test_no_budget_is_a_choice_said_with_its_risk(cloud: MotoAws) -> None:
    code, out, err = _run([*LAUNCH, "--no-budget"])
    assert code == 0, err
    assert f"gpudesk: warning: {guard.MSG_NONE}" in err  # before anything bills
    shown = _show(_launched_id(out))
    assert shown["guard"]["budget"] is None
    assert shown["guard_says"][0] == guard.MSG_NONE
    assert "No budget: nothing stops this machine's bill but you." in out
    assert "  budget: none" in out.splitlines()


@pytest.mark.parametrize("amount", ["0", "-3", "nan"])
def test_a_budget_of_nothing_is_refused_with_words(cloud: MotoAws, amount: str) -> None:
    code, out, err = _run([*LAUNCH, f"--budget={amount}"])
    assert code == 2 and out == ""
    assert "A budget must be more than 0" in err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []  # not even an intent row
    assert cloud.instance_count(AWS_REGION) == 0


def test_no_budget_goes_with_no_budget_flag(cloud: MotoAws,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*LAUNCH, "--budget", "5", "--no-budget"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    code, _, err = _run([*LAUNCH, "--no-budget", "--on-budget", "terminate"])
    assert code == 2 and "--on-budget needs a budget" in err
    assert cloud.instance_count(AWS_REGION) == 0


def test_a_fixed_default_and_a_warn_only_action_still_cap(cloud: MotoAws) -> None:
    """Preferences' fixed amount replaces the hours; "warn" there watches budgets, but a
    launch still gets its cap (its own budget acts: stop)."""
    save_settings(Settings(machine_budget_usd=40.0, budget_action="warn"))
    code, out, err = _run(LAUNCH)
    assert code == 0, err
    assert "Budget 40.00 USD (the default budget per machine in Preferences)." in err
    shown = _show(_launched_id(out))
    assert (shown["guard"]["budget"], shown["guard"]["action"]) == (40.0, "stop")
    save_settings(Settings(machine_budget_hours=2.0))
    code, out, err = _run([*LAUNCH, "--on-budget", "terminate"])
    assert code == 0, err
    shown = _show(_launched_id(out))
    price = shown["price_per_hour"]
    assert (shown["guard"]["budget"], shown["guard"]["action"]) == (
        pytest.approx(2 * price), "terminate")
    assert "EC2 terminates it (shutdown behaviour: terminate)" in out


def test_a_kept_alive_group_ends_itself_at_the_default_day(cloud: MotoAws) -> None:
    """--keep-alive needs a budget: the default is one, and the group's own end (as moto
    holds it) is the day at the price the launch counted."""
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--json"])
    assert code == 0, err
    data = json.loads(out)
    shown = _show(data["id"])
    price = shown["price_per_hour"]
    assert price > 0 and shown["guard"]["budget"] == pytest.approx(24 * price, rel=1e-9)
    assert data["guard_says"] and data["guard_says"][0].startswith(
        f"At {24 * price:.2f} USD the group ends itself")
    (action,) = cloud.client("autoscaling").describe_scheduled_actions(
        AutoScalingGroupName=shown["group"]["id"])["ScheduledUpdateGroupActions"]
    assert action["DesiredCapacity"] == 0
    assert shown["group"]["ends_at"] is not None


def test_on_tencent_the_day_is_counted_at_the_clouds_quote(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No role and "stop": refused with words about the budget before anything bills, or
    launched when the user accepts that only the open app stops it (--app-stop-only)."""
    credentials.save_credentials(tencent_creds)
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    tencent.zone_prices[(CVM_ZONE, CVM_TYPE, "POSTPAID_BY_HOUR")] = QUOTED_CNY
    launch = ["launch", "--provider", "tencent", "--region", "ap-guangzhou", "--zone",
              CVM_ZONE, "--type", CVM_TYPE, "--allow-from", "203.0.113.7/32",
              "--no-wait-ssh", "--poll", "0.01", "--no-instance-role"]
    code, out, err = _run(launch)
    assert code != 0 and out == ""
    assert "a stop at the budget cannot end the bill with gpudesk closed" in err
    assert "Nothing was launched" in err and "--app-stop-only" in err
    with Ledger() as ledger:
        assert [m.id for m in ledger.machines() if m.billing] == []
    code, out, err = _run([*launch, "--app-stop-only"])
    assert code == 0, err
    shown = _show(_launched_id(out))
    quoted_usd = round(QUOTED_CNY / 7.2, 6)
    assert shown["price_per_hour"] == quoted_usd  # the cloud's, not the catalog's 1.209
    assert shown["guard"]["budget"] == pytest.approx(24 * quoted_usd, rel=1e-9)
    stops = f"At {24 * quoted_usd:.2f} USD gpudesk stops this machine with StopInstances"
    assert stops in out
    assert guard.MSG_DESKTOP_ONLY in out  # only the open app stops it, as accepted
    for line in shown["guard_says"]:
        assert f"  {line}" in out.splitlines()


# ---------------------------------------------------------------- the Launch dialog, clicked


@pytest.fixture
def window(qtbot, loop, aws, memory_keyring, monkeypatch, banner_port):  # type: ignore[no-untyped-def]
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(AWS_REGION)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def _preferences(window: MainWindow) -> SettingsDialog:
    dialog = window.show_preferences()
    assert isinstance(dialog, SettingsDialog)
    return dialog


def _ok(dialog: SettingsDialog) -> QPushButton:
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)


def _set_hours_in_preferences(window: MainWindow, qtbot: Any, hours: str) -> None:
    dialog = _preferences(window)
    edit = dialog.findChild(QLineEdit, "pref_machine_budget_hours")
    assert edit is not None and edit.text() == "24"  # out of the box: a day
    edit.selectAll()
    qtbot.keyClicks(edit, hours)
    with qtbot.waitSignal(dialog.saved):
        qtbot.mouseClick(_ok(dialog), Qt.MouseButton.LeftButton)
    assert load_settings().machine_budget_hours == float(hours)


def _open_launch(window: MainWindow) -> LaunchDialog:
    select_offer(window, AWS_TYPE, AWS_REGION)
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    return dialog


def _parts(dialog: LaunchDialog) -> tuple[QDoubleSpinBox, QCheckBox, QLabel, QLabel]:
    field = dialog.findChild(QDoubleSpinBox, "budget")
    none = dialog.findChild(QCheckBox, "noBudget")
    said = dialog.findChild(QLabel, "guardText")
    note = dialog.findChild(QLabel, "budgetNote")
    assert field is not None and none is not None and said is not None and note is not None
    return field, none, said, note


def _colour(label: QLabel) -> str:
    label.ensurePolished()
    return label.palette().color(QPalette.ColorRole.WindowText).name()


def test_the_launch_dialog_starts_from_preferences_and_none_is_a_red_choice(
        window: MainWindow, qtbot: Any) -> None:
    price = _catalog_price("aws", AWS_TYPE, AWS_REGION)
    _set_hours_in_preferences(window, qtbot, "48")
    dialog = _open_launch(window)
    field, none, said, note = _parts(dialog)
    default = round(48 * price, 2)
    assert field.value() == default and field.isEnabled() and not none.isChecked()
    assert note.isVisible()
    assert note.text() == (f"Budget ${default:,.2f}: 48 hours of the machine at "
                           f"${price:,.3f}/h (the default in Preferences).")
    assert f"At {default:.2f} USD the machine's agent shuts it down" in said.text()
    assert _colour(said) != RED and guard.MSG_NONE not in said.text()

    qtbot.mouseClick(none, Qt.MouseButton.LeftButton)  # "No budget", on purpose
    assert none.isChecked() and not field.isEnabled()
    assert said.text().startswith(guard.MSG_NONE)
    assert _colour(said) == RED
    assert not note.isVisible()
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS) as launched:
        qtbot.mouseClick(dialog.launch_button, Qt.MouseButton.LeftButton)
    m = window.ledger.get(launched.args[0])
    assert m is not None and m.budget is None and m.state == "running"
    dialog.close_button.click()

    dialog = _open_launch(window)  # unticked (the default): a launch with the default
    field, none, said, _note = _parts(dialog)
    assert not none.isChecked() and field.value() == default
    qtbot.mouseClick(none, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(none, Qt.MouseButton.LeftButton)  # ticked and unticked again
    assert not none.isChecked() and field.isEnabled() and _colour(said) != RED
    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS) as launched:
        qtbot.mouseClick(dialog.launch_button, Qt.MouseButton.LeftButton)
    m = window.ledger.get(launched.args[0])
    assert m is not None and m.budget == pytest.approx(default) and m.on_budget == "stop"
    assert "agent" in m.enforced_by.split(",")


def test_the_dialog_follows_the_price_until_the_user_types_an_amount(
        window: MainWindow, qtbot: Any) -> None:
    dialog = _open_launch(window)
    field, _none, _said, note = _parts(dialog)
    on_demand = dialog.price()
    assert field.value() == round(24 * on_demand, 2)
    field.selectAll()
    qtbot.keyClicks(field.lineEdit(), "7")
    assert field.value() == 7.0 and not note.isVisible()  # the user's own amount, said as is
    assert dialog.plan().budget == 7.0 and dialog.plan().budget_hours == 0.0
    field.lineEdit().selectAll()
    qtbot.keyClick(field.lineEdit(), Qt.Key.Key_Delete)
    qtbot.keyClicks(field.lineEdit(), "0")
    plan = dialog.plan()  # 0 is never none: the day at the price the launch counts by
    assert (plan.budget, plan.budget_hours) == (None, 24.0)
    assert note.isVisible() and "24 hours of the machine at the price the cloud quotes" \
        in note.text()


def test_the_preferences_field_is_checked(window: MainWindow, qtbot: Any) -> None:
    dialog = _preferences(window)
    edit = dialog.findChild(QLineEdit, "pref_machine_budget_hours")
    assert edit is not None
    edit.selectAll()
    qtbot.keyClicks(edit, "0")
    qtbot.mouseClick(_ok(dialog), Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and edit.property("invalid") is True
    error = dialog.findChild(QLabel, "prefError_machine_budget_hours")
    assert error is not None and "Enter hours above 0" in error.text()
    assert not Path(paths.settings_file()).exists() or \
        load_settings().machine_budget_hours == 24.0


def test_a_corrected_field_does_not_move_the_fields_below(window: MainWindow, qtbot: Any) -> None:
    """The error under a field goes when it is corrected, but its room stays: the next
    click lands where the user aimed (issue 31)."""
    dialog = _preferences(window)
    edit = dialog.findChild(QLineEdit, "pref_machine_budget_hours")
    below = dialog.findChild(QLineEdit, "pref_idle_minutes")
    assert edit is not None and below is not None
    edit.selectAll()
    qtbot.keyClicks(edit, "0")
    qtbot.mouseClick(_ok(dialog), Qt.MouseButton.LeftButton)
    error = dialog.findChild(QLabel, "prefError_machine_budget_hours")
    assert error is not None and error.isVisible()
    qtbot.waitUntil(lambda: below.mapTo(dialog, below.rect().topLeft()).y() > 0)
    where = below.mapTo(dialog, below.rect().topLeft())
    edit.selectAll()
    qtbot.keyClicks(edit, "12")
    qtbot.waitUntil(lambda: error.text() == "")
    dialog.layout().activate()
    assert below.mapTo(dialog, below.rect().topLeft()) == where
