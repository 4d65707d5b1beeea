"""Watch and machine profiles (issue 14): an own machine's profile (key file, python,
folder) is used without asking again; the page says the agent keeps running and Stop agent
ends it; a new page watches again what was watched; no key is an authentication failure,
not the network. Real loopback sshd, the real agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_telemetry import PYTHON  # noqa: E402, F401
from fixtures_telemetry import Roots  # noqa: E402, F401
from fixtures_telemetry import agent_pid  # noqa: E402, F401
from fixtures_telemetry import roots  # noqa: E402, F401
from fixtures_telemetry import smi_wrapper  # noqa: E402, F401
from test_ui_run import _host_key  # noqa: E402

from gpudesk.agent.runs import pid_alive  # noqa: E402
from gpudesk.services.cloud.machines import add_own_machine  # noqa: E402
from gpudesk.services.cloud.machines import ssh_command  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.ui.watch.watch_page import WatchPage  # noqa: E402

WAIT_MS = 60_000


@pytest.fixture
def ledger() -> Any:
    with Ledger() as led:  # the default file: targets.resolve reads the same ledger
        yield led


def own(ledger: Ledger, server: SshdServer, root: Path, key: bool = True) -> str:
    m = add_own_machine(ledger, "lab", server.host, server.port, server.user,
                        key_file=str(server.client_key) if key else "", python=PYTHON,
                        root=str(root))
    PinStore().pin("gpudesk-lab", _host_key(server))
    return m.id


def watch(qtbot, ledger: Ledger, tmp_path: Path) -> WatchPage:  # type: ignore[no-untyped-def]
    page = WatchPage(ledger, lambda: Settings())
    qtbot.addWidget(page)
    page.nvidia_smi = str(smi_wrapper(tmp_path / "bin", "v100"))
    return page


def test_profile_agent_note_stop_agent_and_watching_again(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots,  # noqa: F811
        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = roots.new()
    ref = own(ledger, sshd, root)
    machine = ledger.get(ref)
    assert machine is not None
    assert ssh_command(machine) == f"ssh -i {sshd.client_key} -p {sshd.port} " \
                                   f"{sshd.user}@{sshd.host}"
    page = watch(qtbot, ledger, tmp_path)
    page.machine.setCurrentIndex(page.machine.findData(ref))
    assert page.identity.text() == ""  # the profile's key, python and folder are used
    page.connect_button.click()
    qtbot.waitUntil(lambda: agent_pid(root) is not None and page.feeds[ref].site is not None,
                    timeout=WAIT_MS)
    pid = agent_pid(root)
    assert pid is not None and pid_alive(pid)
    # the feed's state reaches the page as a queued signal, a loop turn after ``site``
    qtbot.waitUntil(lambda: "keeps running on lab after gpudesk closes" in page.agent.text(),
                    timeout=WAIT_MS)
    assert not page.stop_agent_button.isHidden()
    page.shutdown()

    again = watch(qtbot, ledger, tmp_path)  # a restart: it watches lab again by itself
    qtbot.waitUntil(lambda: ref in again.feeds and again.feeds[ref].site is not None,
                    timeout=WAIT_MS)
    assert agent_pid(root) == pid  # the same agent, still running
    qtbot.waitUntil(again.stop_agent_button.isEnabled, timeout=WAIT_MS)
    again.stop_agent_button.click()
    qtbot.waitUntil(lambda: "the agent is stopped" in again.status.text(), timeout=WAIT_MS)
    assert not pid_alive(pid)
    assert not again.feeds  # not watched any more, so not restarted by the keeper
    again.shutdown()


def test_no_key_is_said_to_be_an_authentication_failure(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots,  # noqa: F811
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # no ssh-agent either
    ref = own(ledger, sshd, roots.new(), key=False)
    page = watch(qtbot, ledger, tmp_path)
    page.machine.setCurrentIndex(page.machine.findData(ref))
    page.connect_button.click()
    qtbot.waitUntil(lambda: "no key" in page.status.text(), timeout=WAIT_MS)
    text = page.status.text()
    assert "authentication" in text and "Check that the machine is running" not in text
    page.shutdown()
