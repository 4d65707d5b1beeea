"""Watch: live GPUs and spend of every connected machine, an overview and a dashboard each.

Connecting deploys the agent (with the idle and budget rules from Preferences,
so the machine keeps enforcing them when gpudesk is closed) and streams its
samples over one SSH channel; after a drop the stream backfills from the
agent's file. Each machine has its own feed and its own dashboard.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSplitter
from PySide6.QtWidgets import QStackedWidget
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.settings import Settings
from gpudesk.services.core.window_state import load_state
from gpudesk.services.core.window_state import update_state
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.telemetry import NO_GPU_SRC
from gpudesk.services.remote.telemetry import TelemetrySample
from gpudesk.ui.watch.dashboard_page import DashboardPage
from gpudesk.ui.watch.dashboard_page import OverviewPage
from gpudesk.ui.watch.record_batcher import RecordBatcher
from gpudesk.ui.watch.store_state import StoreState
from gpudesk.ui.watch.store_state import read_state
from gpudesk.ui.watch.store_state import run_with_store
from gpudesk.ui.watch.store_state import state_text
from gpudesk.ui.widgets.allow_me_offer import AllowMeOffer
from gpudesk.ui.widgets.host_key_question import HostKeyQuestion
from gpudesk.ui.widgets.machine_combo import MachineCombo
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

SPEND_EVERY_MS = 30_000
SPEND_POINTS = 120


def sample_record(s: TelemetrySample) -> dict[str, Any]:
    """A parsed sample back in the agent's record schema, which the dashboard takes."""
    return {"seq": s.seq, "t": s.time, "src": s.src,
            "gpus": [{"index": g.index, "uuid": g.uuid, "name": g.name, "util": g.util_pct,
                      "mem_used_mib": g.mem_used_mib, "mem_total_mib": g.mem_total_mib,
                      "temp_c": g.temp_c, "power_w": g.power_w,
                      "power_limit_w": g.power_limit_w} for g in s.gpus],
            "procs": [{"pid": p.pid, "gpu_uuid": p.gpu_uuid, "gpu_index": p.gpu_index,
                       "name": p.name, "mem_used_mib": p.mem_used_mib} for p in s.procs]}


def describe_guard(rules: Any) -> str:
    """The agent's rules in words: what it does to the machine on its own."""
    parts: list[str] = []
    idle = getattr(rules, "idle", None)
    budget = getattr(rules, "budget", None)
    actions = {"stop": QCoreApplication.translate("WatchPage", "stop it"),
               "terminate": QCoreApplication.translate("WatchPage", "terminate it"),
               "warn": QCoreApplication.translate("WatchPage", "warn")}
    if idle is not None:
        parts.append(QCoreApplication.translate(
            "WatchPage", "{action} after {minutes:g} min with every GPU under {pct:g} %").format(
            action=actions.get(idle.action, idle.action), minutes=idle.minutes,
            pct=idle.below_pct))
    if budget is not None:
        parts.append(QCoreApplication.translate(
            "WatchPage", "{action} at {cap:.2f} {currency} spent").format(
            action=actions.get(budget.action, budget.action), cap=budget.cap,
            currency=budget.currency))
    if getattr(rules, "spot_provider", "none") not in ("none", ""):
        parts.append(QCoreApplication.translate("WatchPage", "watch for a spot interruption"))
    separator = QCoreApplication.translate("WatchPage", "; ")  # between the rules
    return separator.join(parts) or QCoreApplication.translate("WatchPage", "warnings only")


@dataclass(frozen=True)
class FeedSource:
    """Where a feed logs in and what agent it puts there: the machine's address and key,
    the host-key policy, the agent's rules and the machine profile's python and folder."""

    ref: str
    identity: str | None
    policy: HostKeyPolicy
    rules: Any
    python: str = "python3"
    root: str = "~/gpudesk"
    nvidia_smi: str | None = None  # tests point this at the stand-in


class TelemetryFeed(QObject):
    """One machine: connect, deploy the agent, stream; signals arrive on the GUI thread."""

    record = Signal(object)  # a record dict
    state = Signal(str)  # "connecting", "streaming", "resuming", "disconnected", "stopped",
    # "failed"
    failed = Signal(str)  # the message, in words
    hole = Signal(str)

    def __init__(self, source: FeedSource, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.source = source
        self.stream: Any = None
        self.site: Any = None
        self.state_now = "stopped"
        self.no_gpu = False  # the agent said the machine has no NVIDIA GPU or driver
        self.state.connect(self._keep_state)  # first: the page's slots read it
        self._conn: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True,
                                        name=f"gpudesk-feed-{source.ref}")

    def start(self) -> TelemetryFeed:
        self.state.emit("connecting")
        self._thread.start()
        return self

    def _keep_state(self, state: str) -> None:
        self.state_now = state

    @property
    def connection(self) -> Any:
        """The feed's SSH connection once made (other cheap reads share it), else None."""
        return self._conn

    def _main(self) -> None:
        from gpudesk.services.remote import agent_deploy
        from gpudesk.services.remote.telemetry import TelemetryStream

        src = self.source
        try:
            conn = targets.open_connection(src.ref, Path(src.identity) if src.identity
                                           else None, src.policy)
            self._conn = conn
            site = agent_deploy.deploy(conn, src.rules, root=src.root, python=src.python,
                                       nvidia_smi=src.nvidia_smi)
            self.site = site
            if self._stop.is_set():
                conn.close()
                return
            self.stream = TelemetryStream(
                conn, site.follow_command, self._sample,
                on_hole=lambda h: self._tell(self.hole, h.message()),
                on_state=lambda st, *_: self._tell(self.state, str(st)),
                keeper=lambda: agent_deploy.ensure_running(conn, site)).start()
        except Exception as exc:  # noqa: BLE001 - reported in words
            self.failed.emit(error_text(exc)[0])
            self.state.emit("failed")

    @staticmethod
    def _tell(signal: Any, text: str) -> None:
        """Emit from the stream's thread; a feed already deleted (its page closed while the
        stream was stopping) has nobody to tell, and its thread must not die of it."""
        with contextlib.suppress(RuntimeError):  # "Signal source has been deleted"
            signal.emit(text)

    def _sample(self, s: TelemetrySample) -> None:
        self.no_gpu = s.no_gpu if (s.no_gpu or s.gpus) else self.no_gpu
        self.record.emit(sample_record(s))

    def stop(self) -> None:
        self._stop.set()
        if self.stream is not None:
            self.stream.stop(timeout=5)
        if self._conn is not None:
            self._conn.close()
        self.state.emit("stopped")


def spend_points(h: spend.History, now: float, n: int = SPEND_POINTS) -> list[tuple[float, float]]:
    """The cumulative cost curve of ``h`` from its first start to ``now``."""
    first = spend.first_moment(h)
    if first is None or now <= first:
        return []
    step = (now - first) / (n - 1)
    return [(first + i * step, spend.cost(h, first + i * step).total) for i in range(n)]


class WatchPage(Retranslating, QWidget):
    def __init__(self, ledger: Ledger, settings: Callable[[], Settings],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("watchPage")
        self.ledger = ledger
        self.settings = settings
        self.question = HostKeyQuestion(self)
        self.feeds: dict[str, TelemetryFeed] = {}
        self.dashboards: dict[str, DashboardPage] = {}
        self._said: dict[str, str] = {}  # each machine's last status line (_say)
        self.nvidia_smi: str | None = None  # tests point this at the stand-in
        self.remote_root = "~/gpudesk"
        self.python = "python3"

        self.machine = MachineCombo(ledger, self, min_chars=30)
        self.machine.setObjectName("watchMachine")
        self.identity = QLineEdit(self)
        self.identity.setObjectName("watchIdentity")
        self.connect_button = QPushButton(self)
        self.connect_button.setObjectName("watchConnect")
        self.disconnect_button = QPushButton(self)
        self.disconnect_button.setObjectName("watchDisconnect")
        self.agent = QLabel(self)  # the agent goes on after gpudesk closes: say so
        self.agent.setObjectName("watchAgent")
        self.agent.setWordWrap(True)
        self.stop_agent_button = QPushButton(self)
        self.stop_agent_button.setObjectName("watchStopAgent")
        self.stop_agent_button.setVisible(False)
        self.agent_runner = TaskRunner(self, button=self.stop_agent_button)
        self.store = QLabel(self)  # the run's bucket, as the agent there reports it
        self.store.setObjectName("watchStore")
        self.store.setWordWrap(True)
        self.store.setVisible(False)
        self.store_runner = TaskRunner(self, show_dialog=False, busy_cursor=False)
        self.store_runner.failed.connect(lambda why: self._show_store(self.tr(
            "The run's upload state could not be read: {why}").format(why=why)))
        self.status = QLabel(self)
        self.status.setObjectName("watchStatus")
        self.status.setWordWrap(True)
        # SSH to a cloud machine failed: offer to move its /32 when this computer moved
        self.allow_me_offer = AllowMeOffer(ledger, self)
        self.allow_me_offer.said.connect(self.status.setText)
        self.overview = OverviewPage(self)
        self.stack = QStackedWidget(self)
        self.placeholder = QLabel(self)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack.addWidget(self.placeholder)
        bar = QHBoxLayout()
        bar.addWidget(self.machine, 2)
        bar.addWidget(self.identity, 1)
        bar.addWidget(self.connect_button)
        bar.addWidget(self.disconnect_button)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.overview)
        splitter.addWidget(self.stack)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 5)
        splitter.setSizes([130, 600])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        agent_row = QHBoxLayout()
        agent_row.addWidget(self.agent, 1)
        agent_row.addWidget(self.stop_agent_button)
        layout.addLayout(agent_row)
        layout.addWidget(self.store)
        layout.addWidget(self.status)
        self.connect_button.clicked.connect(self.connect_selected)
        self.stop_agent_button.clicked.connect(self.stop_agent)
        self.machine.currentIndexChanged.connect(lambda _i: self._show_key())
        self.agent_runner.failed.connect(self.status.setText)
        self.disconnect_button.clicked.connect(self.disconnect_current)
        self.overview.machine_selected.connect(self.show_machine)
        self.spend_timer = QTimer(self)
        self.spend_timer.setInterval(SPEND_EVERY_MS)
        self.spend_timer.timeout.connect(self.refresh_spend)
        self.spend_timer.start()
        self.retranslate()
        self.reload_machines()
        self._watched = load_state().watched
        if self._watched:  # the machines watched before gpudesk closed, after the first paint
            QTimer.singleShot(0, self, self.reconnect_watched)

    def reconnect_watched(self) -> None:
        """Watch again what was watched when gpudesk closed (the agents kept running)."""
        for ref in self._watched:
            if ref not in self.dashboards and (ref.startswith("ssh://") or
                                               self._machine(ref) is not None):
                self.machine.setCurrentText(ref)
                index = self.machine.findData(ref)
                if index >= 0:
                    self.machine.setCurrentIndex(index)
                self.connect_selected()

    def _show_key(self) -> None:
        """The key field says which key a chosen machine's profile uses (left empty)."""
        machine = self._machine(self._ref()) if self._ref() else None
        if machine is not None and machine.key_file:
            self.identity.setPlaceholderText(self.tr("from the machine: {key}").format(
                key=machine.key_file))
        elif machine is not None:
            self.identity.setPlaceholderText(self.tr("from the machine: the ssh-agent")
                                             if machine.provider == "own" else
                                             self.tr("from the machine: the key in the "
                                                     "keyring"))
        else:
            self.identity.setPlaceholderText(self.tr("key file (ssh:// and own machines)"))

    def _remember(self) -> None:
        update_state(watched=list(self.dashboards))

    def retranslate(self) -> None:
        line = self.machine.lineEdit()
        if line is not None:
            line.setPlaceholderText(self.tr("a machine, or ssh://user@host:port"))
        self._show_key()
        self.connect_button.setText(self.tr("Watch"))
        self.disconnect_button.setText(self.tr("Stop watching"))
        self.stop_agent_button.setText(self.tr("Stop agent"))
        self.stop_agent_button.setToolTip(self.tr("End gpudesk's agent on this machine (your "
                                                  "own machine: nothing else needs it)"))
        self._show_agent()
        self.placeholder.setText(self.tr("Choose a machine and press Watch: gpudesk starts its "
                                         "agent there and shows every GPU live."))
        self._update_buttons()


    def reload_machines(self) -> None:
        self.machine.reload()

    def _ref(self) -> str:
        return self.machine.ref()

    def _machine(self, ref: str) -> Machine | None:
        return None if ref.startswith("ssh://") else self.ledger.find(ref)

    def current_key(self) -> str:
        page = self.stack.currentWidget()
        return page.key if isinstance(page, DashboardPage) else ""

    def _update_buttons(self) -> None:
        self.disconnect_button.setEnabled(bool(self.current_key()))
        self._show_agent()

    def _is_cloud(self, key: str) -> bool:
        machine = self._machine(key)
        return machine is not None and machine.provider not in ("own", "")

    def _show_agent(self) -> None:
        """Say that the agent outlives gpudesk: what it guards on a cloud machine, or how to
        end it on the user's own machine."""
        key = self.current_key()
        feed = self.feeds.get(key)
        if not key:
            self.agent.setText("")
            self.stop_agent_button.setVisible(False)
            return
        name = self._name(key)
        if feed is None or feed.site is None:
            # Not reached (yet): whether an agent runs there, and what it guards, is unknown.
            self.stop_agent_button.setVisible(False)
            self.agent.setText(self.tr("gpudesk has not reached {machine} yet, so whether its "
                                       "agent runs there is not known.").format(machine=name)
                               if feed is not None and feed.state_now in ("failed",
                                                                          "disconnected")
                               else "")
            return
        if self._is_cloud(key):
            self.stop_agent_button.setVisible(False)
            rules = feed.source.rules if feed is not None else None
            guard = describe_guard(rules)
            self.agent.setText(self.tr("The gpudesk agent keeps running on {machine} after "
                                       "gpudesk closes and enforces: {guard}.").format(
                machine=name, guard=guard))
        else:
            self.stop_agent_button.setVisible(True)
            self.stop_agent_button.setEnabled(feed is not None and feed.site is not None
                                              and not self.agent_runner.busy)
            self.agent.setText(self.tr("The gpudesk agent keeps running on {machine} after "
                                       "gpudesk closes (it samples the GPUs and only warns). "
                                       "Stop agent ends it.").format(machine=name))

    def _name(self, key: str) -> str:
        machine = self._machine(key)
        return (machine.name or machine.id) if machine is not None else key

    def stop_agent(self) -> None:
        """Stop watching the current (own) machine and end its agent there."""
        key = self.current_key()
        feed = self.feeds.get(key)
        if not key or feed is None or feed.site is None or self._is_cloud(key):
            return
        data_dir, identity, name = feed.site.data_dir, feed.source.identity, self._name(key)
        policy = self.question.policy()

        def work() -> bool:
            from gpudesk.services.remote import agent_deploy

            conn = targets.open_connection(key, Path(identity) if identity else None, policy)
            try:
                return agent_deploy.stop_agent(conn, data_dir)
            finally:
                conn.close()

        self.disconnect_current()  # first: the feed's keeper would start it again
        self.status.setText(self.tr("{machine}: stopping the agent…").format(machine=name))
        self.agent_runner.run_blocking(work, on_success=lambda was: self.status.setText(
            (self.tr("{machine}: the agent is stopped.") if was else
             self.tr("{machine}: no agent was running.")).format(machine=name)),
            title=self.tr("The agent was not stopped"))

    def connect_selected(self) -> DashboardPage | None:
        from gpudesk.services.remote.machine_rules import target_rules

        ref = self._ref()
        if not ref:
            self.status.setText(self.tr("Choose a machine to watch."))
            return None
        if ref in self.dashboards:
            self.show_machine(ref)
            return self.dashboards[ref]
        # the same rules as ``gpudesk watch`` and a run's start write (one decision)
        machine, rules = target_rules(self.ledger, ref, self.settings())
        name = (machine.name or machine.id) if machine is not None else ref
        page = DashboardPage(name, ref, self)
        self.dashboards[ref] = page
        self.stack.addWidget(page)
        self.overview.watch(page)
        python = machine.remote_python if machine is not None and machine.remote_python \
            else self.python  # the machine profile's python and folder
        root = machine.remote_root if machine is not None and machine.remote_root \
            else self.remote_root
        feed = TelemetryFeed(FeedSource(ref, self.identity.text().strip() or None,
                                        self.question.policy(), rules, python=python, root=root,
                                        nvidia_smi=self.nvidia_smi), parent=self)
        batcher = RecordBatcher(page.feed_many, page)
        feed.record.connect(batcher.put, Qt.ConnectionType.DirectConnection)  # any thread
        feed.failed.connect(lambda text, n=name, r=ref: self._say(
            r, self.tr("{machine}: {why}").format(machine=n, why=text)),
            Qt.ConnectionType.QueuedConnection)
        feed.failed.connect(lambda _text, r=ref: self.allow_me_offer.ssh_failed(r),
                            Qt.ConnectionType.QueuedConnection)
        feed.hole.connect(lambda text, r=ref: self._say(r, text),
                          Qt.ConnectionType.QueuedConnection)
        feed.state.connect(lambda st, n=name, f=feed, r=ref: self._show_state(n, st, f, r),
                           Qt.ConnectionType.QueuedConnection)
        feed.record.connect(lambda rec, n=name, f=feed, r=ref: self._show_state(
            n, "streaming", f, r) if rec.get("src") == NO_GPU_SRC else None,
                            Qt.ConnectionType.QueuedConnection)
        feed.state.connect(lambda _st: self._show_agent(), Qt.ConnectionType.QueuedConnection)
        feed.state.connect(lambda st: self.refresh_store() if st == "streaming" else None,
                           Qt.ConnectionType.QueuedConnection)
        self.feeds[ref] = feed
        feed.start()
        self._remember()
        self.show_machine(ref)
        self.refresh_spend()
        return page

    def _say(self, ref: str, text: str) -> None:
        """A machine's own status line: shown while that machine is the one on screen, kept
        for when it is chosen again; never another machine's words (issue 31)."""
        self._said[ref] = text
        if self._shown_ref() in (ref, ""):
            self.status.setText(text)

    def _shown_ref(self) -> str:
        current = self.stack.currentWidget()
        return next((ref for ref, page in self.dashboards.items() if page is current), "")

    def _show_state(self, name: str, state: str, feed: TelemetryFeed | None = None,
                    ref: str = "") -> None:
        """The connection in words. Reopening the agent's stream over a connection that
        held ("resuming": rules pushed, the agent restarted) says nothing: nothing dropped."""
        texts = {"connecting": self.tr("{machine}: connecting and starting the agent…"),
                 "streaming": self.tr("{machine}: live."),
                 "disconnected": self.tr("{machine}: connection lost, reconnecting (the gap "
                                         "is filled from the machine)…"),
                 "stopped": self.tr("{machine}: not watched.")}
        say = (lambda text: self._say(ref, text)) if ref else self.status.setText
        if state == "streaming" and feed is not None and feed.no_gpu:
            say(self.tr("{machine}: connected. No NVIDIA GPU or driver on this "
                        "machine (nvidia-smi was not found), so there is "
                        "nothing to sample.").format(machine=name))
            return
        if state in texts:
            say(texts[state].format(machine=name))

    def show_machine(self, key: str) -> None:
        page = self.dashboards.get(key)
        if page is not None:
            self.stack.setCurrentWidget(page)
            if key in self._said:  # its own last words, not another machine's
                self.status.setText(self._said[key])
        self._show_store("")
        self.refresh_store()
        self._update_buttons()

    def disconnect_current(self) -> None:
        key = self.current_key()
        if not key:
            return
        feed = self.feeds.pop(key, None)
        if feed is not None:
            feed.stop()
        page = self.dashboards.pop(key)
        self.overview.remove_machine(key)
        self.stack.removeWidget(page)
        page.deleteLater()
        self._remember()
        self._update_buttons()

    def refresh_store(self) -> None:
        """The shown machine's run: what its agent has put in the bucket (``store.json``),
        read over the feed's connection; nothing when that run has no bucket."""
        key = self.current_key()
        feed = self.feeds.get(key)
        conn = feed.connection if feed is not None else None
        if conn is None or self.store_runner.busy:
            return

        def work() -> StoreState | None:
            record = run_with_store(key)
            return None if record is None else read_state(conn, record)

        self.store_runner.run_blocking(work, on_success=lambda state: self._show_store(
            state_text(state) if state is not None and key == self.current_key() else ""))

    def _show_store(self, text: str) -> None:
        self.store.setText(text)
        self.store.setVisible(bool(text))

    def refresh_spend(self) -> None:
        """The spend panel of each ledger machine: cost so far, rate and its budget cap;
        and the shown run's upload state, on the same timer."""
        self.refresh_store()
        settings = self.settings()
        now = time.time()
        for key, page in self.dashboards.items():
            machine = self._machine(key)
            if machine is None:
                continue
            h = spend.history(self.ledger, machine)
            cap = settings.machine_budget_usd or None
            page.set_spend(spend_points(h, now), spend.rate_per_hour(h, now), h.currency,
                           cap, None, compute_only=not spend.rates_for(h).known)

    def shutdown(self) -> None:
        for feed in self.feeds.values():
            feed.stop()
        self.feeds.clear()
