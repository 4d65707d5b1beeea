"""The runaway-bill matrix: each cloud × budget action × fault, measured by the cloud's bill.

Every row launches one machine with a budget through gpudesk's own launcher (the same
``Launcher`` + ``first_boot.for_launch`` that ``gpudesk launch --budget`` and the Launch
dialog run) against the cloud stand-ins (moto for AWS, ``tencent_standin``,
``aliyun_standin``), lets a clock the matrix controls run past the budget with one fault
injected, and reads the stand-in's bill (``cloud_bill``; ``ec2_bill`` over moto). A row
ends in exactly one of:

* ``capped`` — the bill, 30 days after the launch, is at most the budget + one billing
  step (one minute of compute: EC2's minimum, and the matrix's clock step);
* ``refused`` — the launch was refused with a reason, and nothing was billed;
* ``said`` — the bill goes past that, and what remains is said word for word (``SAID``)
  both in the Launch dialog's guard text and in ``gpudesk show --json``'s ``guard_says``;
* ``OVER`` — none of these: a runaway bill gpudesk neither stops nor says. Not an
  outcome the suite accepts; the matrix prints it so it is seen.

What runs for real: the launcher, first-boot user data and the rules in it, the clouds'
own timers (CVM ``ActionTimer`` fired by the stand-in at its time, ECS
``AutoReleaseTime`` released at its time, EC2 ``InstanceInitiatedShutdownBehavior``
applied to an OS shutdown), the agent's ``Guard`` (gpudesk/agent/guard.py, rules.py) on
the rules gpudesk put in the machine's user data, the desktop's ``BudgetChecker`` and its
owed actions run through ``machines.act`` (what ``BudgetAlerts`` does each check),
``reconcile_provider`` every five minutes, ``machine_budget.change_budget`` (what
``gpudesk budget`` calls), ``spot_recovery.relaunch_like`` and ``gpudesk show``.

What is simulated, and why: the machine itself. 104 rows of real sshd + real agent
processes for an hour of budget each do not fit a 2-core box in minutes, so the agent's
guard runs in-process on the matrix's clock (one tick a minute, busy GPUs), with its
power action replaced by a shell command that writes the action to a file; the matrix,
playing the machine's OS, turns that into "OS shutdown from inside" on the stand-in,
which then does what that cloud does (EC2: the shutdown behaviour; CVM: stopped, keeps
charging; ECS: stopped in standard mode, keeps charging). systemd's ``Restart=on-failure``
is played the same way: a killed agent comes back one step later with the same events
file; a reboot brings it back with a new boot id. The SSH push of new rules after
``gpudesk budget`` is replaced by handing the agent the rules gpudesk computes for it
(``machine_rules.agent_rules``) when the desktop is open and online. The desktop's
"network lost" is a provider factory that answers every call with a network error.
``time.time`` is the matrix's clock for the whole run (gpudesk, the stand-ins and the
SDKs' signatures read it; the ECS SDK signs with the real clock and its stand-in checks
that one).

Roles (issues 21, 29): every row launches with the role allowed, the default; on Tencent
Cloud and Alibaba Cloud gpudesk makes it (CAM/RAM on the stand-ins) and names it in
RunInstances, so the ``tencent`` and ``aliyun`` machines carry it from their first second;
in the ``tencent+norole`` and ``aliyun+norole`` rows the account refuses it. The agent's rules
then name the role's command, and the matrix's machine runs the real
``gpudesk/agent/cloud_stop.py`` for it (a subprocess, as the agent does) against a
metadata stand-in (``metadata_standin``) that hands the role's temporary keys only while
the stand-in says the role is bound to the machine, and the cloud stand-in's endpoint; the
CVM call is signed on the matrix's clock (the one the CVM stand-in checks). The first-boot
rules in the user data already name that command (without region or instance: the metadata
says both), and the first-boot bundle carries ``cloud_stop`` pruned to the machine's cloud
(``first_boot.boot_bundle``; tests/test_first_boot_size.py runs that bundled copy against the
stand-ins); the matrix runs the repository's module for it.

Keep-alive groups (issue 23): the ``aws+group``, ``tencent+group`` and ``aliyun+group`` rows
launch with ``LaunchPlan.keep_alive`` through the same launcher against moto's Auto Scaling,
the Tencent AS stand-in (``tencent_as_standin``, CVM beside it) and the ESS stand-in
(``aliyun_ess_standin``, in front of the ECS stand-in); what is played and why is written on
:class:`GroupRowRun`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

T0 = 1_796_083_200.0  # 2026-12-01T00:00:00Z: the launch moment of every row
STEP_S = 5.0  # the clock's step: the first-boot guard's own period (boot.py --every 5)
DESKTOP_EVERY_S = 30.0  # BudgetAlerts.CHECK_EVERY_MS
HORIZON_S = 30 * 24 * 3600.0  # the bill is read 30 days after the launch
RECONCILE_EVERY_S = 300.0
FAULT_AT = 0.25  # faults happen a quarter of the way to the budget
STOPPED_FOR_S = 3600.0  # "user stop then start": stopped an hour
ADDRESS = "203.0.113.7/32"

CLOUDS = ("aws", "tencent", "aliyun")
ACTIONS = ("stop", "terminate")
FAULTS: tuple[tuple[str, str], ...] = (
    ("app-closed", "app closed right after launch, before SSH ever answers"),
    ("agent-sigkill", "agent SIGKILLed"),
    ("agent-oom", "agent OOM-killed"),
    ("reboot", "machine rebooted"),
    ("stop-start", "user stop then start"),
    ("no-price", "no price at launch"),
    ("timer-refused", "the cloud refuses the timer change"),
    ("network-lost", "the desktop loses the network"),
    ("budget-lowered", "budget lowered while running"),
    ("budget-raised", "budget raised while running"),
    ("no-guard", "guard failed to install"),
    ("spot-replaced", "a spot replacement"),
    ("watched-closed", "app closed after the first Watch"),
    ("cli-only", "CLI only: gpudesk launch with no budget flag, laptop shut"),
    ("console-stop-start", "stopped and started again in the cloud's console"),
)
# A Tencent/Alibaba Cloud "stop" has no cloud timer (the role's stop-charging stop is its cap),
# so its "timer refused" row tests what can be refused there instead: that stop, twice.
STOP_REFUSED = ("stop-refused", "the cloud refuses the agent's stop twice")


def faults_for(cloud: str, action: str) -> list[str]:
    """The faults of one cloud × action, each testing what it names (issue 29)."""
    names = [f for f, _ in FAULTS]
    if cloud in ("tencent", "aliyun") and action == "stop":
        names = [STOP_REFUSED[0] if f == "timer-refused" else f for f in names]
    return names
# Rows whose account refuses gpudesk the role that lets the machine stop itself through the
# cloud (issue 29): on the clouds where that changes what "stop" means (an OS shutdown there
# keeps charging), a "stop" budget is then refused before anything bills, and "terminate"
# keeps the cloud's own timer. The plain ``tencent``/``aliyun`` rows are the default: the
# role named at creation (issue 29), its stop made by the first-boot guard itself.
ROLE_CLOUDS = ("tencent+norole", "aliyun+norole")
ROLE_ACTIONS = ACTIONS
ROLE_FAULTS = ("app-closed", "network-lost", "watched-closed", "stop-start", "no-guard")
OUTCOMES = ("capped", "refused", "said")

PRICE_LIST_ENV = "GPUDESK_AWS_PRICE_LIST_URL"
CNY_PER_USD = 7.2  # Preferences' default rate: the launch converts budgets with it


@dataclass(frozen=True)
class Offer:
    """What each row launches on a cloud, and the cloud's own price (its currency)."""

    instance_type: str
    region: str
    zone: str
    price: float  # per hour, the cloud's currency (the stand-in's table)
    spot_price: float
    currency: str


OFFERS = {
    "aws": Offer("g5.xlarge", "us-east-1", "", 1.006, 0.45, "USD"),
    "tencent": Offer("GN7.2XLARGE32", "ap-guangzhou", "ap-guangzhou-3", 8.68,
                     round(8.68 * 0.3, 2), "CNY"),
    "aliyun": Offer("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou", "", 16.0,
                    round(16.0 * 0.2, 3), "CNY"),
}
DISK_GB = 100

@dataclass(frozen=True)
class Said:
    """Words that say a risk a row leaves, as gpudesk says them (services/cloud/guard.py)
    both in the Launch dialog and in ``gpudesk show``, and which parts of the bill they
    cover: only ever "disk" (what a stopped machine still bills), never the compute."""

    words: str
    covers: frozenset[str]


# "said" covers only what a *stopped* machine still bills, its disk (issue 29): never compute;
# and the words must put a price on it (guard.MSG_DISK_COST), not only its size.
DISK_COST_WORDS = "Stopped, that disk costs about"
# No sentence covers the compute: a row whose compute goes past the budget is OVER.
DISK = frozenset({"disk"})
SAID: dict[tuple[str, str], Said] = {
    ("aws", "stop"): Said("A stopped EC2 machine still bills its disk ({disk} GB) until you "
                          "terminate it.", DISK),
}
# With the role (the default, named at creation): the agent's stop-charging stop ends the
# compute's bill from the first-boot guard on; the disk bills on, and that is said.
for _cloud, _title, _mode in (("tencent", "Tencent Cloud", "STOP_CHARGING"),
                              ("aliyun", "Alibaba Cloud", "StopCharging")):
    SAID[(_cloud, "stop")] = Said(
        f"{_title} then stops it in {_mode} mode: the compute stops billing, but a stopped "
        "machine still bills its disk ({disk} GB) until you delete it.", DISK)


@dataclass(frozen=True)
class Row:
    cloud: str
    action: str
    fault: str
    bill: str
    budget: str
    outcome: str
    why: str = ""  # not in the table: what happened, for the report

    def as_json(self) -> dict[str, str]:
        return {"cloud": self.cloud, "action": self.action, "fault": self.fault,
                "bill": self.bill, "budget": self.budget, "outcome": self.outcome}


# ---------------------------------------------------------------------------- the clock

class MatrixClock:
    """The one clock of a row: the clouds', gpudesk's (``time.time``) and the agent's."""

    def __init__(self, start: float = T0) -> None:
        self.now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    # the agent's Clock protocol (gpudesk/agent/clock.py)
    def time(self) -> float:
        return self()

    def monotonic(self) -> float:
        return self() - T0 + 1000.0

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.is_set()


@contextlib.contextmanager
def clock_as_time(clock: MatrixClock) -> Iterator[None]:
    real = time.time
    time.time = clock  # type: ignore[assignment]
    try:
        yield
    finally:
        time.time = real  # type: ignore[assignment]


# ---------------------------------------------------------------------------- the clouds

class World:
    """The three clouds, started once for the whole matrix; reset per row."""

    def __init__(self) -> None:
        from aliyun_ess_standin import AliyunEssStandin
        from aliyun_standin import ACCESS_KEY_ID
        from aliyun_standin import ACCESS_KEY_SECRET
        from aliyun_standin import AliyunStandin
        from fixtures_aws import KEY_ID
        from fixtures_aws import SECRET
        from fixtures_aws import MotoAws
        from moto.server import ThreadedMotoServer
        from tencent_as_standin import TencentAsStandin
        from tencent_standin import SECRET_ID
        from tencent_standin import SECRET_KEY

        from gpudesk.services.cloud.providers.base import Credentials

        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        self.aws = MotoAws(f"http://{host}:{port}", Credentials("aws", KEY_ID, SECRET))
        # CVM with Tencent AS beside it on one server (the keep-alive rows' groups); the
        # other rows use CVM alone, as before
        self.tencent = TencentAsStandin().start()
        self.aliyun = AliyunStandin().start()
        # ESS in front of the ECS stand-in: the keep-alive rows' provider talks to it (ECS
        # calls pass through); the other rows talk to ECS directly
        self.ess = AliyunEssStandin(ecs=self.aliyun).start()
        self.creds = {
            "aws": self.aws.credentials,
            "tencent": Credentials("tencent", SECRET_ID, SECRET_KEY),
            "aliyun": Credentials("aliyun", ACCESS_KEY_ID, ACCESS_KEY_SECRET),  # type: ignore[arg-type]
        }
        self._keys = {"tencent": (SECRET_ID, SECRET_KEY),
                      "aliyun": (ACCESS_KEY_ID, ACCESS_KEY_SECRET)}

    def close(self) -> None:
        self.ess.stop()
        self.tencent.stop()
        self.aliyun.stop()
        self.moto.stop()

    def env(self) -> dict[str, str]:
        hosts = (f"127.0.0.1,localhost,{self.tencent.endpoint},{self.aliyun.endpoint},"
                 f"{self.ess.endpoint}")
        return {"AWS_ENDPOINT_URL": self.aws.endpoint, "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "NO_PROXY": hosts, "no_proxy": hosts,
                "GPUDESK_TENCENT_ENDPOINT": f"http://{self.tencent.endpoint}",
                "GPUDESK_ALIYUN_ENDPOINT": f"http://{self.aliyun.endpoint}"}

    def reset(self) -> None:
        self.aws.post("/moto-api/reset")
        self.aws.publish_dlami("us-east-1")
        for name, server in (("tencent", self.tencent), ("aliyun", self.aliyun),
                             ("aliyun", self.ess)):
            server.reset()
            server.add_secret(*self._keys[name])


def _provider(world: World, cloud: str, aws_endpoint: str = "", group: bool = False) -> Any:
    """The app's own provider for ``cloud`` (``accounts.provider_from_keyring``: the keys
    from the keyring, the endpoint from GPUDESK_*_ENDPOINT / AWS_ENDPOINT_URL), or for AWS
    one pointed at ``aws_endpoint`` (the refusing proxy)."""
    from gpudesk.services.cloud.accounts import provider_from_keyring
    from gpudesk.services.cloud.providers.aliyun import AliyunProvider

    if cloud == "aws" and aws_endpoint:
        return world.aws.provider(endpoint_url=aws_endpoint)
    if cloud == "aliyun":  # as accounts.py makes it; its backoff waits not slept (the
        # stand-in's new VPC is Available at the next look, whatever the clock)
        endpoint = world.ess.endpoint if group else world.aliyun.endpoint
        return AliyunProvider(world.creds["aliyun"], endpoint=endpoint,  # type: ignore[arg-type]
                              protocol="http", sleep=lambda _s: None)
    return provider_from_keyring(cloud)  # type: ignore[arg-type]


class Offline:
    """The desktop with no network: every cloud call fails as a lost connection does."""

    def __call__(self, name: str) -> Any:
        from gpudesk.services.cloud.providers.base import ProviderError

        raise ProviderError("network", "The network is unreachable (the desktop is "
                            "offline).")


# ---------------------------------------------------------------------------- the machine

POWER_LOG = "power-actions.log"
REPO = Path(__file__).resolve().parent.parent
ROLE_COMMAND = "gpudesk-cloud-stop"  # gpudesk.agent.cloud_stop.COMMAND
# Each machine's role is its own (``gpudesk-self-stop-<ledger id>``, issue 29): the metadata
# serves the one its rules name, with the keys the stand-in judges against that role's policy.


def rules_from_user_data(user_data: str) -> dict[str, Any]:
    """The agent's rules.json exactly as gpudesk's first-boot script writes it."""
    config = yaml.safe_load(user_data)
    script = str(config["write_files"][0]["content"])
    text = script.split("<<'GPUDESK_RULES'\n", 1)[1].split("\nGPUDESK_RULES", 1)[0]
    data: dict[str, Any] = json.loads(text)
    return data


class Machine:
    """One rented machine's OS: the first-boot guard (in-process), its systemd unit's
    restarts, and a power-off that reaches the cloud as an OS shutdown."""

    def __init__(self, row: RowRun, cloud_id: str, user_data: str, installed: bool) -> None:
        self.row = row
        self.cloud_id = cloud_id
        self.folder = row.folder / f"machine-{cloud_id}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.installed = installed and bool(user_data)
        self.rules_json = rules_from_user_data(user_data) if self.installed else {}
        self.boot = 1
        self.booted_at = row.clock()  # this boot's start on the matrix's clock
        self.guard: Any = None
        self.agent_down_until: float | None = None
        self.power_seen = 0
        self.was_running = False
        self.started = False
        self.metadata: Any = None  # the machine's metadata service, once a role command runs

    def _commands(self, given: dict[str, list[str]]) -> dict[str, list[str]]:
        # the power action: tell "the OS" (this class) to shut down, as `shutdown -h` would
        cmd = ["/bin/sh", "-c", f'echo "$GPUDESK_ACTION" >> "{self.folder / POWER_LOG}"']
        out = {"stop": cmd, "terminate": cmd}
        if self.row.role:  # the role's command runs for real, against the stand-ins
            out.update({action: self._role_command(argv) for action, argv in given.items()
                        if argv and argv[0] == ROLE_COMMAND})
        return out

    def _role_command(self, argv: list[str]) -> list[str]:
        """``gpudesk-cloud-stop …`` as the full agent runs it (cloud_stop.py with the agent's
        python), with the machine's metadata and the cloud's endpoint on 127.0.0.1, and the
        machine's clock the matrix's (for the CVM signature the stand-in checks)."""
        if self.metadata is None:
            from metadata_standin import MetadataStandin

            role = argv[argv.index("--role") + 1]  # the machine's own, as its rules name it
            self.metadata = MetadataStandin(self.row.cloud, role, self.cloud_id,
                                            self.row.offer.region, self.row.role_keys(
                                                self.cloud_id, role)).__enter__()
        server = self.row.world.tencent if self.row.cloud == "tencent" else self.row.world.aliyun
        clock = self.folder / "clock" if self.row.cloud == "tencent" else None
        code = ("import sys, time\n"
                f"sys.path.insert(0, {str(REPO)!r})\n"
                + (f"t = float(open({str(clock)!r}).read())\ntime.time = lambda: t\n"
                   if clock is not None else "")
                + "from gpudesk.agent import cloud_stop\n"
                "sys.exit(cloud_stop.main(sys.argv[1:]))\n")
        return [sys.executable, "-c", code, *argv[1:], "--metadata", self.metadata.url,
                "--endpoint", f"http://{server.endpoint}/"]

    def close(self) -> None:
        if self.metadata is not None:
            self.metadata.__exit__(None, None, None)
            self.metadata = None

    def load_rules(self, data: dict[str, Any]) -> Any:
        from gpudesk.agent.rules import parse_rules

        data = dict(data)
        data["runs_dir"] = str(self.folder / "runs")
        data["commands"] = self._commands(dict(data.get("commands") or {}))
        return parse_rules(data)

    def start_agent(self) -> None:
        from gpudesk.agent.events import EventLog
        from gpudesk.agent.guard import Guard

        if not self.installed:
            return
        clock = self.row.clock
        self.guard = Guard(self.load_rules(self.rules_json), EventLog(self.folder / "agent",
                                                                      clock),
                           runs_dir=self.folder / "runs", log_dir=self.folder, clock=clock,
                           boot=f"boot-{self.boot}", since_boot=self.since_boot)

    def since_boot(self) -> float:
        """The machine's ``/proc/uptime``: seconds since its boot on the matrix's clock
        (never the host's, whose uptime would make the bill depend on the test machine)."""
        return max(0.0, self.row.clock() - self.booted_at)

    def kill_agent(self, restart_after: float | None) -> None:
        self.guard = None
        self.agent_down_until = (self.row.clock() + restart_after
                                 if restart_after is not None else None)

    def new_rules(self, data: dict[str, Any]) -> None:
        self.rules_json = data
        if self.guard is not None:
            self.guard.rules = self.load_rules(data)

    def tick(self) -> None:
        from gpudesk.agent.smi import GpuSample

        now = self.row.clock()
        if self.row.billing_state(self.cloud_id) != "compute":
            self.guard = None  # off (or gone): nothing runs on it
            self.was_running = False
            return
        if not self.was_running:  # it booted: systemd starts the guard
            if self.started:
                self.boot += 1
            self.booted_at = now
            self.started = self.was_running = True
            self.agent_down_until = None
            self.start_agent()
        if self.guard is None and self.agent_down_until is not None and \
                now >= self.agent_down_until:
            self.agent_down_until = None
            self.start_agent()  # systemd: Restart=on-failure (or the boot after a reboot)
        if self.guard is None:
            return
        (self.folder / "clock").write_text(repr(now))  # the machine's clock: the matrix's
        self.guard.observe([GpuSample(index=0, uuid="GPU-0", util=95.0)])  # training
        self.guard.tick()
        log = self.folder / POWER_LOG
        lines = log.read_text().split() if log.exists() else []
        if len(lines) > self.power_seen:
            self.power_seen = len(lines)
            self.guard = None
            self.row.os_shutdown(self.cloud_id)


# ---------------------------------------------------------------------------- one row

@dataclass
class RowRun:
    world: World
    cloud: str
    action: str
    fault: str
    folder: Path
    clock: MatrixClock = field(default_factory=MatrixClock)
    launched_at: float = T0
    machines: dict[str, Machine] = field(default_factory=dict)
    budget_usd: float = 0.0
    notes: list[str] = field(default_factory=list)
    role: bool = False  # the machine gets the role that lets its agent stop it (issue 21)
    role_refused: bool = False  # the account refuses gpudesk the role (CAM/RAM denied)
    budget_from_launch: bool = False  # the launch chose the budget (a front end's default)
    group: bool = False  # a keep-alive group (issue 23): GroupRowRun

    @property
    def label(self) -> str:
        """The row's cloud as the table names it (``tencent+role``, ``aws+group``)."""
        if self.group:
            return f"{self.cloud}+group"
        return f"{self.cloud}+norole" if self.role_refused else self.cloud

    def role_keys(self, cloud_id: str, role: str) -> Callable[[], dict[str, str]]:
        """The metadata's answer for ``role``: its temporary keys (the stand-in's, judged
        against the role's policy) while the cloud says it is bound to ``cloud_id``, else
        the refusal."""
        def issue() -> dict[str, str]:
            if self.cloud == "tencent":
                bound = self.world.tencent.role_of(cloud_id) == role
            else:
                with self.world.aliyun._lock:
                    raw = self.world.aliyun.state.instances.get(cloud_id) or {}
                    bound = raw.get("_ram_role") == role
            if not bound:
                return {"Code": "RoleNotBound"}
            server = self.world.tencent if self.cloud == "tencent" else self.world.aliyun
            return server.role_session(role)
        return issue

    # -- the cloud's side

    def setup(self) -> None:
        from cloud_bill import Bill
        from ec2_bill import Ec2Bill
        from ec2_bill import RefusingProxy

        self.offer = OFFERS[self.cloud]
        self.spot = self.fault == "spot-replaced"
        self.proxy: RefusingProxy | None = None
        if self.cloud == "aws":
            self.ec2 = Ec2Bill(self.clock, self.offer.region)
            self.bill = self.ec2.bill
            if self.fault == "timer-refused":
                self.proxy = RefusingProxy(self.world.aws.endpoint).start()
        elif self.cloud == "tencent":
            self.bill = Bill("tencent", self.clock)
            self.world.tencent.bill = self.bill
        else:
            self.bill = Bill("aliyun", self.clock)
            self.world.aliyun.bill = self.bill
            self.world.aliyun.clock = self.clock
        self.world.tencent.cam_denied = self.role_refused and self.cloud == "tencent"
        self.world.aliyun.ram_denied = self.role_refused and self.cloud == "aliyun"
        self.providers: dict[str, Any] = {}
        self.desktop_open = self.fault not in ("app-closed", "cli-only")
        self.online = self.fault != "network-lost"

    def teardown(self) -> None:
        self.world.tencent.bill = None
        self.world.aliyun.bill = None
        self.world.aliyun.clock = None
        if self.proxy is not None:
            self.proxy.stop()
        for machine in self.machines.values():
            machine.close()
        for p in self.providers.values():
            close = getattr(p, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    def provider(self, name: str) -> Any:
        if name not in self.providers:
            endpoint = self.proxy.url if (self.proxy is not None and name == "aws") else ""
            self.providers[name] = _provider(self.world, name, endpoint)
        return self.providers[name]

    def desktop_providers(self, name: str) -> Any:
        if not self.online:
            return Offline()(name)
        return self.provider(name)

    def sync_bill(self) -> None:
        if self.cloud == "aws":
            self.ec2.sample()
        elif self.cloud == "tencent":
            from cloud_bill import tencent_view

            with self.world.tencent._lock:
                self.bill.sync(tencent_view(self.world.tencent))
        else:
            self.world.aliyun.release_due()

    def billing_state(self, cloud_id: str) -> str:
        self.sync_bill()
        return self.bill.state_of(cloud_id)

    def cloud_timers(self) -> None:
        now = self.clock()
        self.settle_stops()
        if self.cloud == "tencent":
            fired = self.world.tencent.fire_timers(now)
            for iid in fired:
                self.notes.append(f"CVM ActionTimer terminated {iid}")
        elif self.cloud == "aliyun":
            for iid in self.world.aliyun.release_due():
                self.notes.append(f"ECS AutoReleaseTime released {iid}")
        self.sync_bill()

    def settle_stops(self) -> None:
        """The cloud finishes a stop it accepted by itself, whoever asked and whether or not
        anyone looks: the stand-ins move a machine on when it is described (as gpudesk's
        stop waits for it), so with the laptop shut the matrix plays the cloud's own step
        (STOPPING → STOPPED, Stopping → Stopped) once per clock step."""
        server: Any = {"tencent": self.world.tencent, "aliyun": self.world.aliyun}.get(
            self.cloud)
        if server is None:
            return
        key, moving = ("InstanceState", "STOPPING") if self.cloud == "tencent" else (
            "Status", "Stopping")
        with server._lock:
            for raw in list(server.state.instances.values()):
                if raw.get(key) == moving:
                    server._advance(raw)

    def os_shutdown(self, cloud_id: str) -> None:
        if self.cloud == "aws":
            did = self.ec2.os_shutdown(cloud_id)
            self.notes.append(f"agent shut down the OS; EC2 did: {did}")
        elif self.cloud == "tencent":
            self.world.tencent.shutdown_inside(cloud_id)
            self.notes.append("agent shut down the OS; CVM keeps charging")
        else:
            self.world.aliyun.shutdown_inside(cloud_id)
            self.notes.append("agent shut down the OS; ECS keeps charging (standard mode)")
        self.sync_bill()

    def user_data_of(self, cloud_id: str) -> str:
        from gpudesk.services.cloud.providers.user_data import decode  # gzip: AWS, Tencent

        if self.cloud == "aws":
            got = self.world.aws.client("ec2", self.offer.region).describe_instance_attribute(
                InstanceId=cloud_id, Attribute="userData")
            return decode(base64.b64decode(got["UserData"].get("Value", "")))
        if self.cloud == "tencent":
            server: Any = self.world.tencent
            key = "UserData"
        else:
            server = self.world.aliyun
            key = "UserData"
        for params in reversed(server.params("RunInstances")):
            if params.get(key):
                encoded = params[key]
                return decode(base64.b64decode(encoded))
        return ""

    # -- gpudesk's side

    def plan(self, market: str = "on-demand") -> Any:
        from gpudesk.services.cloud.launcher import LaunchPlan

        o = self.offer
        price_usd = o.price if o.currency == "USD" else 0.0
        if market == "spot":
            price_usd = o.spot_price if o.currency == "USD" else 0.0
        if self.fault == "no-price":
            price_usd = 0.0
        return LaunchPlan(provider=self.cloud, instance_type=o.instance_type,  # type: ignore[arg-type]
                          region=o.region, zone=o.zone, market=market,  # type: ignore[arg-type]
                          max_price=0.9 if (market == "spot" and self.cloud == "aws") else None,
                          allow_from=ADDRESS, price_per_hour=price_usd, wait_ssh=False,
                          disk_gb=DISK_GB, budget=self.budget_usd, on_budget=self.action,
                          cny_per_usd=CNY_PER_USD)  # the role allowed: the default

    def launcher(self) -> Any:
        from gpudesk.services.cloud.launcher import Launcher
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.remote import first_boot

        async def sshd_answers(_address: str) -> bool:
            return True  # the simulated machine's sshd is up once it runs

        try:  # no first login over SSH: the machine is simulated, its address is moto's
            hooks = first_boot.for_launch(load_settings, self.ledger, rotation=False)
        except TypeError:
            hooks = first_boot.for_launch(load_settings, self.ledger)
        return Launcher(self.ledger, self.provider, poll_s=0.0, ssh_probe=sshd_answers,
                        first_boot=hooks)

    def launch(self) -> Any:
        plan = self.plan("spot" if self.spot else "on-demand")
        if self.fault == "no-price":  # the cloud answers no price (the launch's own quote)
            if self.cloud == "tencent":
                self.world.tencent.fail_next("InquiryPriceRunInstances", "InternalError",
                                             "An internal error has occurred.", times=50)
            elif self.cloud == "aliyun":
                self.world.aliyun.fail_next("DescribePrice", "InternalError", "The request "
                                            "processing has failed due to some unknown error.",
                                            times=50)
        if self.fault == "cli-only":
            return self.launch_by_cli(plan)
        with self._no_bundled_price():
            result = asyncio.run(self.launcher().launch(plan))
        self.sync_bill()
        return result.machine

    def launch_by_cli(self, plan: Any) -> Any:
        """A new user on the CLI alone: ``gpudesk launch`` with no budget flag (Preferences'
        default, a day of the machine), no SSH wait, and nobody opens the window after."""
        from gpudesk.cli.entry import main
        from gpudesk.services.cloud.providers.base import ProviderError

        argv = ["launch", "--provider", self.cloud, "--type", plan.instance_type,
                "--region", plan.region, "--allow-from", ADDRESS, "--on-budget", self.action,
                "--disk-gb", str(DISK_GB), "--no-wait-ssh", "--poll", "0", "--json"]
        if plan.zone:
            argv += ["--zone", plan.zone]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        self.sync_bill()
        if rc != 0:
            raise ProviderError("other", "gpudesk launch refused: {detail}",
                                err.getvalue().strip()[-300:])
        ledger_id = str(json.loads(out.getvalue())["id"])
        self.notes.append("launched by the CLI: " + " ".join(
            line.strip() for line in err.getvalue().splitlines()[:1]))
        m = self.ledger.get(ledger_id)
        assert m is not None
        return m

    @contextlib.contextmanager
    def _no_bundled_price(self) -> Iterator[None]:
        """AWS "no price at launch": EC2 quotes none itself and the price list is unreachable
        here, so the row's type has no bundled price either (a type newer than the catalog):
        else the launch would count by the catalog's and the row would test nothing."""
        if self.fault != "no-price" or self.cloud != "aws":
            yield
            return
        from dataclasses import replace as replaced

        from gpudesk.services.cloud import catalog
        from gpudesk.services.cloud import launcher

        bundled = catalog.load_catalog()
        bare = replaced(bundled, offers=tuple(
            replaced(o, ondemand_price=None, spot_price=None)
            if o.provider == "aws" and o.instance_type == self.offer.instance_type else o
            for o in bundled.offers))
        saved = launcher.load_catalog
        launcher.load_catalog = lambda *_a: bare  # type: ignore[assignment]
        try:
            yield
        finally:
            launcher.load_catalog = saved  # type: ignore[assignment]

    def boot_machine(self, m: Any) -> None:
        machine = Machine(self, m.cloud_id, self.user_data_of(m.cloud_id),
                          installed=self.fault != "no-guard")
        self.machines[m.cloud_id] = machine
        self.ledger_ids[m.cloud_id] = m.id
        machine.tick()

    def desktop_check(self) -> None:
        from gpudesk.services.cloud import machines as machine_actions
        from gpudesk.services.cloud import reconcile

        if not self.desktop_open:
            return
        now = self.clock()
        if self.online and now - self.last_reconcile >= RECONCILE_EVERY_S:
            self.last_reconcile = now
            with contextlib.suppress(Exception):
                reconcile.reconcile_provider(self.ledger, self.cloud,  # type: ignore[arg-type]
                                             self.provider(self.cloud), [self.offer.region],
                                             reconcile.ReconcileReport(), now=now)
        self.checker.check(now)
        state = self.checker.state
        for owed in state.owed_actions():  # BudgetAlerts._run_owed, without Qt
            row = self.ledger.get(owed.machine)
            if row is None or not row.billing:
                state.settle(owed.key)
                continue
            try:
                asyncio.run(machine_actions.act(self.ledger, owed.machine, owed.action,
                                                self.desktop_providers))  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - kept and retried, as the window does
                state.failed(owed.key, str(exc))
                self.note_once(f"desktop {owed.action} failed: {type(exc).__name__}")
            else:
                state.settle(owed.key)
                self.note_once(f"desktop {owed.action} done")
            state.save()
        self.sync_bill()

    def console(self, action: str, cloud_id: str) -> None:
        """The user in the cloud's console: the cloud's own StopInstances/StartInstances
        (stop-charging where the cloud offers it), gpudesk not asked; its reconcile, every
        five minutes while the app is open, must follow."""
        provider = self.provider(self.cloud)
        getattr(provider, action)(self.offer.region, cloud_id)
        self.notes.append(f"console {action}")
        self.sync_bill()

    def note_once(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def change_budget(self, amount_usd: float) -> None:
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.remote import machine_budget
        from gpudesk.services.remote.machine_rules import agent_rules

        def no_ssh(_m: Any) -> Any:
            raise OSError("the matrix hands the agent its rules without SSH")

        ledger_id = self.ledger_ids[self.first_cloud_id]
        change = machine_budget.change_budget(
            self.ledger, ledger_id, amount_usd, self.action, currency="USD",
            settings=load_settings(), providers=self.desktop_providers,  # type: ignore[arg-type]
            connect=no_ssh, now=self.clock())
        if change.cloud_error:
            self.notes.append(f"budget change: cloud kept its cap ({change.cloud_error})")
        self.sync_bill()
        row = self.ledger.get(ledger_id)
        machine = self.machines.get(self.first_cloud_id)
        if self.desktop_open and self.online and row is not None and machine is not None \
                and machine.installed:
            rules = agent_rules(row, load_settings(), self.ledger, self.clock())
            machine.new_rules(rules.to_json())  # what push_agent writes over SSH
        self.budget_usd = amount_usd

    def reclaim_spot(self, cloud_id: str) -> None:
        if self.cloud == "aws":
            self.ec2.reclaim(cloud_id)
        elif self.cloud == "tencent":
            with self.world.tencent._lock:
                inst = self.world.tencent.state.instances[cloud_id]
                inst["InstanceState"] = "TERMINATING"
                inst["LatestOperation"] = "SpotReclaimed"
        else:
            self.world.aliyun.reclaim(cloud_id)
        self.sync_bill()
        self.notes.append("the cloud reclaimed the spot machine")

    def relaunch(self, lost_cloud_id: str) -> None:
        from gpudesk.services.runs import spot_recovery

        lost = self.ledger_ids[lost_cloud_id]
        try:
            new_id = asyncio.run(spot_recovery.relaunch_like(self.launcher(), lost,
                                                             allow_from=ADDRESS))
        except Exception as exc:  # noqa: BLE001 - said in the row's notes
            self.notes.append(f"replacement failed: {exc}")
            return
        m = self.ledger.get(new_id)
        assert m is not None
        self.sync_bill()
        self.notes.append(f"replacement launched (budget {m.budget})")
        self.boot_machine(m)

    # -- the run

    def run(self) -> Row:
        from gpudesk.services.cloud import credentials
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.money.budgets import BudgetChecker
        from gpudesk.services.money.budgets import BudgetConfig
        from gpudesk.services.money.ledger import Ledger

        self.setup()
        o = self.offer
        price = o.spot_price if self.spot else o.price
        rate = CNY_PER_USD if o.currency == "CNY" else 1.0
        self.budget_usd = round(price / rate, 2)  # about an hour of compute
        start_budget = self.budget_usd
        for creds in self.world.creds.values():
            credentials.save_credentials(creds)
        self.ledger_ids: dict[str, str] = {}
        self.last_reconcile = -1e18
        self.last_check = T0
        with Ledger() as ledger:
            self.ledger = ledger
            self.checker = BudgetChecker.for_ledger(
                ledger, lambda: BudgetConfig.from_settings(load_settings()))
            from gpudesk.services.cloud.providers.base import ProviderError

            try:
                m = self.launch()
            except ProviderError as exc:  # the launcher's refusal, in words, is an outcome;
                self.sync_bill()           # anything else is a broken harness, not "refused"
                return self.result(refused=exc, price=price)
            self.first_cloud_id = m.cloud_id
            self.ledger_id = m.id
            self.boot_machine(m)
            self.show = self.shown(m.id)
            self.dialog = self.dialog_words(m)
            if self.fault == "cli-only" or self.budget_from_launch:  # Preferences' default:
                start_budget = self.budget_usd = round(float(m.budget or 0.0), 2)
            cap_s = start_budget / (price / rate) * 3600.0
            fault_at = T0 + round(cap_s * FAULT_AT / 60.0) * 60.0
            end = T0 + cap_s * (2 if self.fault == "budget-raised" else 1) + 2 * 3600.0
            if self.fault in ("stop-start", "console-stop-start"):
                end += STOPPED_FOR_S
            first = self.machines[m.cloud_id]
            done: set[str] = set()
            while self.clock() < end:
                self.clock.advance(STEP_S)
                now = self.clock()
                self.cloud_timers()
                if now >= fault_at and "fault" not in done:
                    done.add("fault")
                    self.inject(first)
                if self.fault == "stop-start" and "start" not in done and \
                        now >= fault_at + STOPPED_FOR_S:
                    done.add("start")
                    self.user_act("start")
                if self.fault == "console-stop-start" and "start" not in done and \
                        now >= fault_at + STOPPED_FOR_S:
                    done.add("start")
                    self.console("start", first.cloud_id)
                if self.fault == "spot-replaced" and "relaunch" not in done and \
                        now >= fault_at + 60.0 and self.desktop_open and self.online:
                    done.add("relaunch")
                    self.relaunch(first.cloud_id)
                for machine in list(self.machines.values()):
                    machine.tick()
                if now - self.last_check >= DESKTOP_EVERY_S:
                    self.last_check = now
                    self.desktop_check()
                    if self.fault == "watched-closed" and "watched" not in done:
                        done.add("watched")
                        self.watch(first)
                        self.desktop_open = False  # and the laptop is shut
            self.sync_bill()
            return self.result(price=price)

    def watch(self, machine: Machine) -> None:
        """The first Watch: gpudesk's full agent on the machine with the rules the ledger
        gives (what the Watch page deploys over SSH)."""
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.remote.machine_rules import agent_rules

        row = self.ledger.get(self.ledger_ids[machine.cloud_id])
        if row is None or not machine.installed:
            return
        machine.new_rules(agent_rules(row, load_settings(), self.ledger, self.clock()).to_json())
        self.notes.append("watched once (full agent), then the app closed")

    def user_act(self, action: str) -> None:
        from gpudesk.services.cloud import machines as machine_actions

        try:
            asyncio.run(machine_actions.act(self.ledger, self.ledger_id, action,
                                            self.desktop_providers))  # type: ignore[arg-type]
            self.notes.append(f"user {action} done")
        except Exception as exc:  # noqa: BLE001
            self.notes.append(f"user {action} failed: {exc}")
        self.sync_bill()

    def inject(self, first: Machine) -> None:
        f = self.fault
        if f in ("agent-sigkill", "agent-oom"):
            first.kill_agent(restart_after=5.0)  # Restart=on-failure, RestartSec=5
            self.notes.append("agent killed; systemd restarts it")
        elif f == "reboot":
            first.kill_agent(restart_after=60.0)  # back, with the unit, after the boot
            first.boot += 1
            self.notes.append("machine rebooted (new boot id)")
        elif f == "stop-start":
            self.user_act("stop")
        elif f == "console-stop-start":
            self.console("stop", first.cloud_id)
        elif f == STOP_REFUSED[0]:  # the budget's stop, when it comes, is refused twice
            if self.cloud == "tencent":
                self.world.tencent.fail_next("StopInstances", "RequestLimitExceeded",
                                             "Your request is too frequent.", times=2)
            else:
                self.world.aliyun.fail_next("StopInstances", "Throttling", "Request was "
                                            "denied due to request throttling.", times=2)
            self.notes.append("the cloud refuses the next two StopInstances")
        elif f == "timer-refused":
            self.refuse_cloud_cap()
            self.change_budget(round(self.budget_usd / 2, 2))
        elif f == "budget-lowered":
            self.change_budget(round(self.budget_usd / 2, 2))
        elif f == "budget-raised":
            self.change_budget(round(self.budget_usd * 2, 2))
        elif f == "spot-replaced":
            self.reclaim_spot(first.cloud_id)

    def refuse_cloud_cap(self) -> None:
        if self.cloud == "aws":
            assert self.proxy is not None
            self.proxy.refuse["ModifyInstanceAttribute"] = (
                "RequestLimitExceeded", "Request limit exceeded.")
        elif self.cloud == "tencent":
            for action in ("DeleteInstancesActionTimer", "ImportInstancesActionTimer"):
                self.world.tencent.fail_next(action, "RequestLimitExceeded",
                                             "Your request is too frequent.", times=50)
        else:
            self.world.aliyun.fail_next("ModifyInstanceAutoReleaseTime", "Throttling",
                                        "Request was denied due to request throttling.",
                                        times=50)

    # -- what gpudesk says

    def shown(self, ledger_id: str) -> list[str]:
        from gpudesk.cli.entry import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["show", ledger_id, "--json"])
        if rc != 0:
            return []
        return list(json.loads(out.getvalue()).get("guard_says") or [])

    def dialog_words(self, m: Any) -> list[str]:
        """The Launch dialog's guard text for this plan, as ``LaunchDialog._update_guard``
        builds it (``guard.plan`` + ``guard.sentences``), without a window."""
        from gpudesk.services.cloud import guard as guards
        from gpudesk.services.money.ledger import Machine as Row_

        o = self.offer
        price = (o.spot_price if self.spot else o.price) if o.currency == "USD" else 0.0
        g = guards.plan(self.cloud, self.budget_usd, self.action, price, 0.0, T0,
                        role=True)  # the dialog plans the default: the role allowed
        dm = Row_(id="", provider=self.cloud, disk_gb=float(DISK_GB),
                  market="spot" if self.spot else "on-demand")
        return guards.english(dm, g)

    def role_calls(self) -> str:
        """What the agent's role asked of the cloud stand-in (StopInstances and its mode)."""
        server: Any = self.world.tencent if self.cloud == "tencent" else self.world.aliyun
        calls = [p.get("StoppedMode", "") for p in server.params("StopInstances")
                 if self.cloud == "aliyun" or p.get("StoppedMode")]
        return f"StopInstances asked {len(calls)}x ({', '.join(sorted(set(calls))) or '-'})"

    def result(self, *, price: float, refused: Exception | None = None) -> Row:
        o = self.offer
        rate = CNY_PER_USD if o.currency == "CNY" else 1.0
        cap = round(self.budget_usd * rate, 2)
        parts = self.bill.parts(T0 + HORIZON_S)
        bill = f"{parts.total:.2f} {o.currency}"
        budget = f"{cap:.2f} {o.currency}"
        step = self.bill.step_cost(price)
        if refused is not None:
            reason = getattr(refused, "message", lambda: str(refused))()
            ok = bool(reason) and parts.total == 0.0
            return Row(self.label, self.action, self.fault, bill, budget,
                       "refused" if ok else "OVER", f"launch refused: {reason}")
        if self.role:
            self.notes.append(self.role_calls())
        why = "; ".join([*self.notes, f"running {parts.running:.2f}, stopped-charging "
                         f"{parts.keep:.2f}, disk {parts.disk:.2f} {o.currency}"])
        if parts.total <= cap + step + 1e-9:
            return Row(self.label, self.action, self.fault, bill, budget, "capped", why)
        first = SAID.get((self.label, self.action))
        for said in [first] if first is not None else []:
            words = said.words.format(disk=DISK_GB)
            over = {"running": parts.running, "keep": parts.keep, "disk": parts.disk}
            unsaid = sum(v for k, v in over.items() if k not in said.covers)
            compute = parts.running + parts.keep  # never said: capped or OVER
            if compute > cap + step + 1e-9:
                continue
            # the disk's cost is said in money too (guard.MSG_DISK_COST), not only its size
            in_show = any(words in line for line in self.show) and any(
                DISK_COST_WORDS in line for line in self.show)
            in_dialog = any(words in line for line in self.dialog) and any(
                DISK_COST_WORDS in line for line in self.dialog)
            if unsaid <= cap + step + 1e-9 and in_show and in_dialog:
                return Row(self.label, self.action, self.fault, bill, budget, "said",
                           f"{why}; said: {words}")
        return Row(self.label, self.action, self.fault, bill, budget, "OVER", why)


# ---------------------------------------------------------------------------- keep-alive groups

GROUP_CLOUDS = ("aws+group", "tencent+group", "aliyun+group")
GROUP_ACTIONS = ("terminate",)  # a group's end deletes it: its members are terminated
GROUP_FAULTS: tuple[tuple[str, str], ...] = (
    ("reclaim-loop", "a member reclaimed every 10 minutes, app closed"),
    ("replacement-never-boots", "replacements never boot (replaced as unhealthy), app closed"),
    ("no-capacity", "no capacity after a reclaim for 30 minutes, app closed"),
    ("no-capacity-open", "no capacity after a reclaim for 30 minutes, app open"),
    ("group-left-after-run", "the group left at size 1 after the run ended"),
)
# not a row of the matrix: the control that shows a group without its end is seen OVER
END_LOST = "end-lost"
RECLAIM_EVERY_S = 600.0  # reclaim-loop: the spot market takes each member after 10 minutes
UNHEALTHY_AFTER_S = 300.0  # a member that never boots: the group's health check (EC2 ASG
# HealthCheckGracePeriod's default, 300 s) replaces it after this long
NO_CAPACITY_FOR_S = 1800.0  # no-capacity: how long no spot machine of the type is to be had
GROUP_WAIT_MIN = 20  # Preferences keep_alive_wait_min in the "app open" row (default 60)
RUN_ENDS_AT_S = 1200.0  # group-left-after-run: the training finished 20 minutes in


class GroupRowRun(RowRun):
    """One keep-alive row (issue 23): ``LaunchPlan.keep_alive`` through the same launcher,
    a spot group of one with its size-0 scheduled action at budget ÷ price, read back.

    The cloud's side is played on the matrix's clock: each step the group's scheduled action
    is applied at its time (Tencent AS and ESS stand-ins: ``run_scheduled(now)``; moto keeps
    scheduled actions but runs none, so the matrix plays AWS's scheduler: at StartTime it
    applies the action's sizes with UpdateAutoScalingGroup, which terminates the members as
    AWS does), a machine the group started boots (PENDING → RUNNING: the cloud does that
    whether or not anyone looks) and the group brings itself back to its desired size (AS
    ``tick()``, ESS ``tick()``; AWS: moto starts a replacement on
    TerminateInstanceInAutoScalingGroup ShouldDecrementDesiredCapacity=False, which is how
    the matrix reclaims an AWS member, and while capacity is out the matrix keeps moto's
    group from launching and retries for it when capacity is back).

    No agent runs on the members: the rows measure what caps a group with every agent gone
    (a member's own power-off would only make its group start another). The desktop runs
    where the row says (``no-capacity-open``): its BudgetChecker and reconcile every five
    minutes, with ``keep_alive_wait_min`` at 20. The bill counts every machine the group
    started (the stand-ins' bills key on instance ids; a group's members are instances)."""

    def setup(self) -> None:
        super().setup()
        self.spot = True
        self.desktop_open = self.fault == "no-capacity-open"
        self.online = True
        self.capacity = True
        self.next_reclaim = T0 + RECLAIM_EVERY_S
        self.never_boots: dict[str, float] = {}  # member → when the group gives up on it
        self.reclaims = 0
        self.started: list[str] = []  # every member the group started, in order
        self.end_ran = False

    def provider(self, name: str) -> Any:
        if name not in self.providers:
            self.providers[name] = _provider(self.world, name, group=True)
        return self.providers[name]

    def plan(self, market: str = "on-demand") -> Any:
        from dataclasses import replace

        return replace(super().plan("spot"), keep_alive=True, instance_role=False)

    # -- the cloud's side of a group

    def members(self) -> list[str]:
        """The group's members now, as the cloud counts them."""
        if not self.group_id:
            return []
        if self.cloud == "aws":
            return self.ec2.group_members(self.group_id)
        if self.cloud == "tencent":
            server: Any = self.world.tencent
            with server._lock:
                group = server.groups.get(self.group_id)
                return [m["InstanceId"] for m in (group or {}).get("_members", [])
                        if m["LifeCycleState"] != "TERMINATING"]
        return [m["InstanceId"] for m in self.world.ess.alive(self.group_id)]

    def seen(self) -> None:
        for iid in self.members():
            if iid not in self.started:
                self.started.append(iid)

    def group_cloud(self) -> None:
        """One step of the cloud's own work on the group (see the class docstring)."""
        now = self.clock()
        if self.cloud == "aws":
            self._aws_scheduler(now)
            self._aws_converge()
        elif self.cloud == "tencent":
            server: Any = self.world.tencent
            for action in server.run_scheduled(now):
                self.end_ran = True
                self.notes.append(f"AS ran the scheduled action {action} at "
                                  f"{round((now - T0) / 60)} min")
            server.tick()
            self._boot_pending()
        else:
            for task in self.world.ess.run_scheduled(now):
                self.end_ran = True
                self.notes.append(f"ESS ran the scheduled task {task} at "
                                  f"{round((now - T0) / 60)} min")
            self.world.ess.tick()
            self._boot_pending()
        self.seen()
        self.sync_bill()

    def _boot_pending(self) -> None:
        """A machine the group started boots by itself (the stand-ins move one on when it
        is described; with nobody describing it the matrix plays the cloud's own step)."""
        server: Any = self.world.tencent if self.cloud == "tencent" else self.world.aliyun
        key, pending = ("InstanceState", "PENDING") if self.cloud == "tencent" else (
            "Status", "Pending")
        with server._lock:
            for raw in list(server.state.instances.values()):
                if raw.get(key) == pending:
                    if self.cloud == "tencent":
                        server._advance(raw)
                    else:
                        raw["_seen"] = max(raw.get("_seen", 0), 1)
                        server._advance(raw)

    def _aws_scheduler(self, now: float) -> None:
        """AWS's scheduler: an action whose StartTime has come sets the group's sizes."""
        from datetime import UTC
        from datetime import datetime

        from ec2_bill import _asg_backend

        if self.end_ran or not self.group_id:
            return
        # the actions as moto holds them (read in-process each step: a call a step is slow)
        held = [a for a in _asg_backend(self.offer.region).scheduled_actions.values()  # type: ignore[attr-defined]
                if a.auto_scaling_group_name == self.group_id and a.start_time]
        for action in held:
            start = datetime.fromisoformat(str(action.start_time).replace("Z", "+00:00"))
            if (start if start.tzinfo else start.replace(tzinfo=UTC)).timestamp() > now:
                continue
            self.end_ran = True
            self.world.aws.client("autoscaling", self.offer.region).update_auto_scaling_group(
                AutoScalingGroupName=self.group_id, MinSize=action.min_size,
                MaxSize=action.max_size, DesiredCapacity=action.desired_capacity)
            self.notes.append(f"AWS ran the scheduled action {action.scheduled_action_name} "
                              f"at {round((now - T0) / 60)} min")

    def _aws_group(self) -> Any:
        from ec2_bill import _asg_backend

        return _asg_backend(self.offer.region).autoscaling_groups.get(  # type: ignore[attr-defined]
            self.group_id)

    def _aws_converge(self) -> None:
        """While capacity is out moto's group may not launch (EC2 answers
        InsufficientInstanceCapacity to AWS's attempts); when it is back, AWS's retry starts
        the member the group still wants."""
        group = self._aws_group()
        if group is None:
            return
        if not self.capacity:
            if "replace_autoscaling_group_instances" not in vars(group):
                group.replace_autoscaling_group_instances = lambda *_a, **_k: None
            return
        vars(group).pop("replace_autoscaling_group_instances", None)
        if len(group.active_instances()) < (group.desired_capacity or 0):
            group.set_desired_capacity(group.desired_capacity)

    def take(self, iid: str, why: str) -> None:
        """The member ends and the group notices (a reclaim; an unhealthy member replaced)."""
        if self.cloud == "aws":
            self.world.aws.client("autoscaling", self.offer.region) \
                .terminate_instance_in_auto_scaling_group(
                    InstanceId=iid, ShouldDecrementDesiredCapacity=False)
        elif self.cloud == "tencent":
            self.world.tencent.reclaim(iid)
        else:
            self.world.ess.reclaim(iid)
        self.reclaims += 1
        self.sync_bill()
        self.note_once(f"{why}")

    def set_capacity(self, there: bool) -> None:
        self.capacity = there
        o = self.offer
        if self.cloud == "tencent":
            server: Any = self.world.tencent
            with server._lock:
                if there:
                    server.sold_out.pop((o.zone, o.instance_type, "SPOTPAID"), None)
                else:
                    server.sold_out[(o.zone, o.instance_type, "SPOTPAID")] = (
                        "Insufficient stock for the spot request.")
        elif self.cloud == "aliyun":
            with self.world.ess._lock:
                self.world.ess.no_spot = not there
        else:  # before the reclaim that follows: moto would replace the member at once
            self._aws_converge()
        self.notes.append("spot capacity back" if there else "no spot capacity")

    def group_fault(self, now: float) -> None:
        f = self.fault
        members = self.members()
        if f == "reclaim-loop" and now >= self.next_reclaim:
            self.next_reclaim += RECLAIM_EVERY_S
            for iid in members:
                self.take(iid, "the spot market reclaims each member after 10 minutes")
        elif f == "replacement-never-boots":
            if now >= self.fault_at and "reclaim" not in self.done:
                self.done.add("reclaim")
                for iid in members:
                    self.take(iid, "the first member reclaimed")
                return
            for iid in members:
                if "reclaim" in self.done and iid != self.first_cloud_id:
                    due = self.never_boots.setdefault(iid, now + UNHEALTHY_AFTER_S)
                    if now >= due:
                        self.take(iid, "replacements bill but never boot; the group's "
                                       "health check replaces each after 5 minutes")
        elif f in ("no-capacity", "no-capacity-open"):
            if now >= self.fault_at and "reclaim" not in self.done:
                self.done.add("reclaim")
                self.set_capacity(False)
                for iid in members:
                    self.take(iid, "the member reclaimed")
            if "reclaim" in self.done and not self.capacity and \
                    now >= self.fault_at + NO_CAPACITY_FOR_S:
                self.set_capacity(True)
        elif f == END_LOST and now >= self.fault_at and "lost" not in self.done:
            self.done.add("lost")
            self.lose_end()
        elif f == "group-left-after-run" and now >= T0 + RUN_ENDS_AT_S and \
                "ended" not in self.done:
            self.done.add("ended")
            self.notes.append("the run ended; nobody ended the group (desktop closed, the "
                              "agent gone)")

    def lose_end(self) -> None:
        """The control row (``END_LOST``, not in the matrix): the cloud no longer holds the
        group's scheduled end, as if gpudesk had never set it. Such a group must go OVER,
        or the matrix could not see a missing end."""
        if self.cloud == "aws":
            from ec2_bill import _asg_backend

            held = _asg_backend(self.offer.region).scheduled_actions  # type: ignore[attr-defined]
            for name in [k for k, a in held.items() if a.auto_scaling_group_name ==
                         self.group_id]:
                del held[name]
        elif self.cloud == "tencent":
            server: Any = self.world.tencent
            with server._lock:
                for key in [k for k, a in server.actions.items()
                            if a["AutoScalingGroupId"] == self.group_id]:
                    del server.actions[key]
        else:
            with self.world.ess._lock:
                for key in [k for k, t in self.world.ess.tasks.items()
                            if t.get("ScalingGroupId") == self.group_id]:
                    del self.world.ess.tasks[key]
        self.notes.append("the cloud lost the group's scheduled end")

    # -- the row

    def sync_bill(self) -> None:
        super().sync_bill()
        if self.cloud == "aliyun":  # ESS removes members from the ECS state itself
            with self.world.aliyun._lock:
                self.world.aliyun._bill_sync()

    def run(self) -> Row:
        from gpudesk.services.cloud import credentials
        from gpudesk.services.cloud.guard import iso_utc
        from gpudesk.services.cloud.providers.base import ProviderError
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.core.settings import save_settings
        from gpudesk.services.money.budgets import BudgetChecker
        from gpudesk.services.money.budgets import BudgetConfig
        from gpudesk.services.money.ledger import Ledger

        self.setup()
        o = self.offer
        price = o.spot_price
        rate = CNY_PER_USD if o.currency == "CNY" else 1.0
        self.budget_usd = round(price / rate, 2)  # about an hour of compute
        for creds in self.world.creds.values():
            credentials.save_credentials(creds)
        if self.desktop_open:
            from dataclasses import replace

            save_settings(replace(load_settings(), keep_alive_wait_min=GROUP_WAIT_MIN))
        self.ledger_ids = {}
        self.last_reconcile = -1e18
        self.last_check = T0
        self.group_id = ""
        self.show, self.dialog = [], []
        self.done: set[str] = set()
        with Ledger() as ledger:
            self.ledger = ledger
            self.checker = BudgetChecker.for_ledger(
                ledger, lambda: BudgetConfig.from_settings(load_settings()))
            try:
                m = self.launch()
            except ProviderError as exc:
                self.sync_bill()
                return self.result(refused=exc, price=price)
            self.ledger_id = m.id
            self.first_cloud_id = m.cloud_id
            self.ledger_ids[m.cloud_id] = m.id
            self.group_id = m.group_id
            self.notes.append(f"group {m.group_id}: end read back at "
                              f"{iso_utc(m.cloud_timer_at)} "
                              f"({round(((m.cloud_timer_at or T0) - T0) / 60, 1)} min)")
            self.seen()
            cap_s = self.budget_usd / (price / rate) * 3600.0
            self.fault_at = T0 + round(cap_s * FAULT_AT / 60.0) * 60.0
            end = T0 + cap_s + 2 * 3600.0
            while self.clock() < end:
                self.clock.advance(STEP_S)
                now = self.clock()
                self.group_cloud()
                self.group_fault(now)
                if self.desktop_open and now - self.last_check >= DESKTOP_EVERY_S:
                    self.last_check = now
                    self.desktop_check()
                if self.end_ran and not self.members() and not self.desktop_open:
                    break  # the group is at size 0 for good (max 0): nothing starts again;
                    # whatever still bills is billed to the 30 days by its open interval
            self.sync_bill()
            from gpudesk.services.cloud import keep_alive_launch as ka

            for e in ledger.events(m.id):  # what gpudesk itself did to the group, and when
                if e.step in (ka.STEP_NO_CAPACITY, ka.STEP_GROUP_ENDED):
                    self.notes.append(f"gpudesk: {e.step} at {round((e.at - T0) / 60)} min")
            row = ledger.get(m.id)
            left = self.members()
            self.notes.append(f"{len(self.started)} machine(s) started by the group, "
                              f"{self.reclaims} taken; left at the end: {len(left)}; "
                              f"ledger: {row.state if row else '-'}/"
                              f"{row.group_state if row else '-'}")
            if left:  # a group still holding a machine after its end: nothing caps it
                self.notes.append(f"STILL RUNNING: {', '.join(left)}")
            return self.result(price=price)


# ---------------------------------------------------------------------------- the matrix

@contextlib.contextmanager
def _environment(world: World, home: Path) -> Iterator[None]:
    import keyring
    from fixtures_keyring import MemoryKeyring

    saved = {k: os.environ.get(k) for k in [*world.env(), "GPUDESK_HOME", PRICE_LIST_ENV,
                                            "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                                            "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"]}
    before = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    os.environ.update(world.env())
    os.environ["GPUDESK_HOME"] = str(home)
    # the AWS price list is on the internet: the matrix has none (nothing listens there)
    os.environ[PRICE_LIST_ENV] = "http://127.0.0.1:9"
    for k in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "AWS_DEFAULT_REGION"):
        os.environ.pop(k, None)
    try:
        yield
    finally:
        keyring.set_keyring(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_row(world: World, cloud: str, action: str, fault: str, folder: Path) -> Row:
    folder.mkdir(parents=True, exist_ok=True)
    world.reset()
    provider, _, kind = cloud.partition("+")
    run = (GroupRowRun(world, provider, action, fault, folder, group=True) if kind == "group"
           else RowRun(world, provider, action, fault, folder,
                       role=provider in ("tencent", "aliyun") and kind != "norole",
                       role_refused=kind == "norole"))
    with _environment(world, folder / "home"), clock_as_time(run.clock):
        try:
            return run.run()
        finally:
            run.teardown()


def cases() -> list[tuple[str, str, str]]:
    return [*((c, a, f) for c in CLOUDS for a in ACTIONS for f in faults_for(c, a)),
            *((c, a, f) for c in ROLE_CLOUDS for a in ROLE_ACTIONS for f in ROLE_FAULTS),
            *((c, a, f) for c in GROUP_CLOUDS for a in GROUP_ACTIONS for f, _ in GROUP_FAULTS)]


def run_matrix(only: Callable[[tuple[str, str, str]], bool] = lambda _c: True,
               world: World | None = None) -> list[Row]:
    """Every row, in order; starts (and stops) the clouds unless ``world`` is given."""
    import logging

    quiet = ("gpudesk", "werkzeug", "moto")
    levels = {name: logging.getLogger(name).level for name in quiet}
    for name in quiet:  # quiet while the matrix runs; put back after (later tests log)
        logging.getLogger(name).setLevel(logging.CRITICAL)
    own = world is None
    world = world or World()
    tmp = Path(tempfile.mkdtemp(prefix="guard-matrix-"))
    rows: list[Row] = []
    try:
        for i, case in enumerate(cases()):
            if only(case):
                rows.append(run_row(world, *case, tmp / f"row-{i:02d}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if own:
            world.close()
    return rows


FAULT_WORDS = {**dict(FAULTS), **dict(GROUP_FAULTS), STOP_REFUSED[0]: STOP_REFUSED[1]}
HEADER = ("| cloud | action | fault | bill | budget | outcome |\n"
          "| --- | --- | --- | --- | --- | --- |\n")
DOC_INTRO = """# The guard matrix: what a runaway bill comes to

Made by `python scripts/guard_matrix.py` (do not edit by hand); `tests/test_guard_matrix.py`
runs the matrix and holds this table to it.

Each row launches one machine with a budget of about one hour of compute through gpudesk's
launcher against the cloud stand-ins, injects one fault, runs a controlled clock past the
budget and reads the **stand-in's own bill** 30 days after the launch (`tests/cloud_bill.py`:
each cloud's billing rules for running, stopped, stopped-but-charging and ended machines and
EC2's 60-second minimum; `tests/ec2_bill.py` over moto). Outcomes:

* **capped** — the bill is at most the budget + one billing step (one minute of compute);
* **refused** — the launch was refused with a reason and nothing was billed;
* **said** — the risk that remains is said word for word in the Launch dialog and in
  `gpudesk show`;
* **OVER** — none of these: a defect, reported, and the test fails for it.

Every row launches as a new user would, with the defaults: the machine's role is named in
RunInstances (issue 29), so on Tencent Cloud and Alibaba Cloud the agent's "stop" is the
role's stop-charging StopInstances, which the first-boot guard asks the stand-in for itself
from the machine's first second, app closed or not. In the `tencent+norole` and
`aliyun+norole` rows the account refuses gpudesk the role (CAM/RAM denied): a "stop" budget
is then refused before anything bills, and "terminate" keeps the cloud's own timer. A
Tencent/Alibaba Cloud "stop" has no cloud timer, so its "timer" fault refuses the agent's
stop twice instead; on AWS "no price at launch" also takes the bundled price away.

*said* covers only what a stopped machine still bills: its disk. A row whose compute (running,
or stopped but charged) passes the budget by more than one billing step is OVER, whatever is
said. The `cli-only` rows launch with `gpudesk launch` and no budget flag (Preferences'
default: 24 hours of the machine), and nobody opens the window after; the `console` rows
stop and start the machine in the cloud's console (gpudesk's reconcile follows).

What the role may touch: on AWS only the machine that calls (`aws:ARN` equals
`ec2:SourceInstanceARN`). On Tencent Cloud and Alibaba Cloud, whose policies have no key for
"the calling machine", each machine gets a role of its own, `gpudesk-self-stop-<ledger id>`,
whose policy allows the stop and terminate calls only on the instance tagged with that
ledger id (CAM `qcs:resource_tag`, RAM `ecs:tag/gpudesk-ledger-id`); the stand-ins judge
each call made with a role's keys against that policy, and the role is deleted with the
machine's other leftovers once it has ended. What remains: anyone who may tag instances in
the account could put a machine's ledger id on another instance and so bring it into that
machine's reach.

A spot machine with a "stop" budget ends released at its budget on every cloud (the `a spot
replacement` rows): EC2 one-time spot terminates, CVM cannot stop a spot machine without
charging, and an Alibaba Cloud spot machine stopped in StopCharging mode may never start
again while its disk bills on (a month of its 100 GB disk, about 98.63 CNY, was 32× the
replacement's budget of an hour of spot compute when it was stopped). A keep-alive group
(`+group` rows) ends by deleting its group, members and their disks.

The `aws+group`, `tencent+group` and `aliyun+group` rows (issue 23) launch a spot machine
its cloud keeps alive (`--keep-alive`): the cloud's own group of one (EC2 Auto Scaling, Tencent
AS, Alibaba Cloud ESS) with its size-0 scheduled action at budget ÷ (price + disk), read back.
Members are reclaimed, never boot, or find no capacity; no agent runs on them, and the desktop
is closed except in the "app open" row. Their *bill* counts every machine the group started;
the scheduled end is run by the stand-in (AS, ESS) or, on moto, played by the matrix at its
time, as AWS's scheduler would.

*bill* is in the cloud's currency; *budget* is the machine's budget (USD in gpudesk's ledger)
in the cloud's currency at 7.2 CNY/USD, after the row's change where the fault changes it.
The clock steps 5 s (the first-boot guard's period); the desktop checks every 30 s.

How each part runs (real or simulated, and why) is written at the top of
`tests/guard_matrix_cases.py`.

"""


def table(rows: list[Row]) -> str:
    lines = [f"| {r.cloud} | {r.action} | {FAULT_WORDS.get(r.fault, r.fault)} | {r.bill} | "
             f"{r.budget} | {r.outcome} |" for r in rows]
    return HEADER + "\n".join(lines) + "\n"


def document(rows: list[Row]) -> str:
    return DOC_INTRO + table(rows)


def as_json(rows: list[Row]) -> str:
    return json.dumps({"rows": [r.as_json() for r in rows]}, indent=1)


__all__ = ["ACTIONS", "CLOUDS", "END_LOST", "FAULTS", "GROUP_ACTIONS", "GROUP_CLOUDS",
           "GROUP_FAULTS", "OUTCOMES", "ROLE_CLOUDS", "Row", "World", "as_json", "cases",
           "document", "run_matrix", "run_row", "table"]
