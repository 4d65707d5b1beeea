"""The Launch dialog's "Recover by itself" (issue 23), clicked in the real window against
moto over HTTP: only a spot machine can ask for it, the launch makes the cloud's own group
(capped by its scheduled end) and Terminate on the Instances page ends the group, so the
cloud starts nothing again."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

from typing import Any

from cloud_window import confirm_terminate
from cloud_window import fill_launch_dialog
from cloud_window import select_offer
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from keep_alive_capacity import no_capacity
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QDoubleSpinBox
from test_ui_launch_store import aws_window  # noqa: F401 - the fixture

from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

WAIT_MS = 30000


def _tick(qtbot: Any, box: QCheckBox) -> None:
    """Toggle with the keyboard (the spot box has its words in the form's label column)."""
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Space)


def _groups(aws: MotoAws) -> list[dict[str, Any]]:
    return aws.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]


def test_recover_by_itself_needs_spot_makes_a_capped_group_and_terminate_ends_it(
        aws_window: MainWindow, qtbot: Any, aws: MotoAws) -> None:
    select_offer(aws_window, "g4dn.xlarge", "us-east-1")
    aws_window.plan.launch_button.click()
    dialog = aws_window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    spot = dialog.findChild(QCheckBox, "spot")
    keep = dialog.findChild(QCheckBox, "keepAlive")
    budget = dialog.findChild(QDoubleSpinBox, "budget")
    assert spot is not None and keep is not None and budget is not None
    assert keep.text() == "Recover by itself" and "budget runs out" in keep.toolTip()
    if spot.isChecked():
        _tick(qtbot, spot)
    assert not keep.isEnabled()  # an on-demand machine is not reclaimed
    _tick(qtbot, spot)
    assert spot.isChecked() and keep.isEnabled()
    _tick(qtbot, keep)
    assert keep.isChecked()
    budget.selectAll()
    qtbot.keyClicks(budget, "5")
    qtbot.keyClick(budget, Qt.Key.Key_Tab)
    assert budget.value() == 5.0
    guard = dialog.guard_text.text()
    assert guard.startswith("At $5.00 the group ends itself") and "0 machines" in guard
    assert not dialog.on_budget.isEnabled()  # the group's end terminates: nothing to choose

    with qtbot.waitSignal(dialog.launched, timeout=WAIT_MS):
        dialog.launch_button.click()
    assert not keep.isEnabled()  # what was launched stays said
    (m,) = aws_window.ledger.machines()
    assert m.group_id and m.group_live and m.market == "spot" and m.state == "running"
    (group,) = _groups(aws)
    assert group["AutoScalingGroupName"] == m.group_id and group["DesiredCapacity"] == 1
    assert [i["InstanceId"] for i in group["Instances"]] == [m.cloud_id]
    (end,) = aws.client("autoscaling").describe_scheduled_actions(
        AutoScalingGroupName=m.group_id)["ScheduledUpdateGroupActions"]
    assert end["StartTime"].timestamp() == m.cloud_timer_at
    dialog.close()

    # the cloud reclaims it and its group starts another: Refresh says so, and the tray
    first = m.cloud_id
    aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=first, ShouldDecrementDesiredCapacity=False)
    page = aws_window.instances
    page.refresh_button.click()
    qtbot.waitUntil(lambda: "reclaimed and replaced" in page.status.text(), timeout=WAIT_MS)
    moved = aws_window.ledger.get(m.id)
    assert moved is not None and moved.cloud_id != first and moved.group_live
    assert ("Resumed on a new machine",
            f"{m.name or m.id} was reclaimed and replaced: the new machine resumes the run "
            "from the bucket's latest checkpoint.") in aws_window.tray.messages

    confirm_terminate(aws_window, qtbot, m.id)
    assert _groups(aws) == []
    ended = aws_window.ledger.get(m.id)
    assert ended is not None and ended.group_state == "ended"


def test_a_group_waiting_for_capacity_is_listed_and_can_be_ended(
        aws_window: MainWindow, qtbot: Any, aws: MotoAws) -> None:
    """Between machines the row's own machine is gone, but its group lives and may start
    another: the page lists it (Show ended unticked), says so, and Terminate ends it."""
    from gpudesk.services.cloud.launcher import LaunchPlan

    async def launch() -> Any:
        return await aws_window.launcher.launch(LaunchPlan(
            provider="aws", instance_type="g4dn.xlarge", region="us-east-1", market="spot",
            allow_from="203.0.113.7/32", budget=5.0, keep_alive=True, wait_ssh=False,
            instance_role=False))

    done: list[Any] = []
    aws_window.instances.sync_runner.run(launch(), on_success=done.append)
    qtbot.waitUntil(lambda: bool(done), timeout=WAIT_MS)
    (m,) = aws_window.ledger.machines()
    no_capacity(m.group_id)  # reclaimed, and no spot capacity for another
    aws.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=m.cloud_id, ShouldDecrementDesiredCapacity=False)
    page = aws_window.instances
    assert not page.show_ended.isChecked()
    page.refresh_button.click()
    qtbot.waitUntil(lambda: "was reclaimed; its group is starting another" in page.status.text(),
                    timeout=WAIT_MS)
    row = next(r for r, x in enumerate(page.model.machines) if x.id == m.id)
    state = page.model.data(page.model.index(row, page.model.columns.index("state")))
    assert state == "reclaimed; its group starts another"
    page.select_machine(m.id)
    assert page.terminate_button.isEnabled() and not page.stop_button.isEnabled()
    box = page.ask_terminate()
    assert box is not None and f"End {m.name}'s group {m.group_id}?" in box.text()
    yes = next(b for b in box.buttons() if b.objectName() == "confirmTerminateYes")
    yes.click()

    def ended() -> bool:
        row = aws_window.ledger.get(m.id)
        return row is not None and row.group_state == "ended"

    qtbot.waitUntil(ended, timeout=WAIT_MS)
    assert _groups(aws) == []
