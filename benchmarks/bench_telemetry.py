"""Telemetry: sample-to-callback latency, deploy cost and reconnect recovery, over real SSH.

The agent runs on this computer behind the test fixture's loopback OpenSSH
server, sampling the stand-in nvidia-smi's 8-GPU A100 capture at 1 Hz; the
desktop side is a :class:`TelemetryStream`. Latency is the agent's sample
time ``t`` (taken when nvidia-smi's rows were read) to the moment the
callback runs, on the same clock, so it is what the dashboard would wait
minus its own redraw. Goal: ≤ 1.5 s (issue 5, sample-to-screen).

Also measured: deploying the agent the first time (upload + start) and again
with nothing changed (one round trip), and how long after every SSH session
is killed the next sample arrives (reconnect + backfill).

    python -m benchmarks.bench_telemetry [seconds]
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fixtures_sshd import sshd_missing_reason  # noqa: E402
from fixtures_sshd import start_sshd  # noqa: E402
from fixtures_telemetry import smi_wrapper  # noqa: E402

from gpudesk.services.remote import agent_deploy  # noqa: E402
from gpudesk.services.remote.host_keys import HostKeyPolicy  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.remote.ssh import SshConnection  # noqa: E402
from gpudesk.services.remote.ssh import SshTarget  # noqa: E402
from gpudesk.services.remote.telemetry import TelemetrySample  # noqa: E402
from gpudesk.services.remote.telemetry import TelemetryStream  # noqa: E402

GOAL_LATENCY_S = 1.5
SECONDS = 20.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(seconds: float = SECONDS) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="gpudesk-bench-telemetry-"))
    old_home = os.environ.get("GPUDESK_HOME")
    os.environ["GPUDESK_HOME"] = str(work / "home")
    server = start_sshd(work / "sshd")
    root = work / "machine"
    site = None
    try:
        target = SshTarget.parse(server.url, key_file=server.client_key)
        conn = SshConnection(target, HostKeyPolicy.expect(server.host_key_fingerprint),
                             store=PinStore(), backoff_s=0.1).connect()
        smi = str(smi_wrapper(work / "bin", "a100x8"))
        t0 = time.perf_counter()
        site = agent_deploy.deploy(conn, None, root=str(root), python=sys.executable,
                                   nvidia_smi=smi)
        first_deploy = time.perf_counter() - t0
        t0 = time.perf_counter()
        agent_deploy.deploy(conn, None, root=str(root), python=sys.executable, nvidia_smi=smi)
        again_deploy = time.perf_counter() - t0

        samples: list[TelemetrySample] = []
        lock = threading.Lock()
        arrived = threading.Condition(lock)

        def on_sample(s: TelemetrySample) -> None:
            with arrived:
                samples.append(s)
                arrived.notify_all()

        stream = TelemetryStream(conn, site.follow_command, on_sample, since=site.last_seq,
                                 backoff_s=0.1, backoff_max_s=0.5,
                                 keeper=lambda: agent_deploy.ensure_running(conn, site))
        with stream:
            time.sleep(seconds)  # measuring a steady stream for a fixed time
            with lock:
                steady = list(samples)
            killed_at = time.monotonic()
            server.kill_sessions()
            with arrived:
                n = len(samples)
                arrived.wait_for(lambda: len(samples) > n + 1, timeout=60)
                recovered_s = time.monotonic() - killed_at
                seqs = [s.seq for s in samples]
        conn.close()
    finally:
        if site is not None and site.pid:
            try:
                pid = int((Path(site.data_dir) / "agent.pid").read_text())
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError):
                pass
        server.stop()
        if old_home is None:
            os.environ.pop("GPUDESK_HOME", None)
        else:
            os.environ["GPUDESK_HOME"] = old_home
        shutil.rmtree(work, ignore_errors=True)
    lat = [s.latency_s for s in steady[1:]]  # the first may be a backfilled record
    contiguous = seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    result = {
        "samples": len(steady), "gpus_per_sample": len(steady[-1].gpus) if steady else 0,
        "latency_median_s": round(statistics.median(lat), 3),
        "latency_p95_s": round(_pct(lat, 0.95), 3), "latency_max_s": round(max(lat), 3),
        "goal_latency_s": GOAL_LATENCY_S, "met": max(lat) <= GOAL_LATENCY_S,
        "first_deploy_s": round(first_deploy, 3), "unchanged_deploy_s": round(again_deploy, 3),
        "recovery_after_kill_s": round(recovered_s, 3), "seqs_contiguous": contiguous,
    }
    print(f"{result['samples']} samples of {result['gpus_per_sample']} GPUs in {seconds:g} s; "
          f"sample-to-callback latency median {result['latency_median_s']} s, "
          f"p95 {result['latency_p95_s']} s, max {result['latency_max_s']} s "
          f"(goal <= {GOAL_LATENCY_S} s: {'met' if result['met'] else 'MISSED'})")
    print(f"deploy: first {result['first_deploy_s']} s, unchanged {result['unchanged_deploy_s']} s;"
          f" next samples {result['recovery_after_kill_s']} s after every SSH session was killed"
          f" (seqs contiguous: {contiguous})")
    return result


def main() -> dict[str, Any]:
    reason = sshd_missing_reason()
    if reason:
        print(f"skipped: {reason}")
        return {"skipped": reason}
    return run(float(sys.argv[1]) if len(sys.argv) > 1 and __name__ == "__main__" else SECONDS)


if __name__ == "__main__":
    main()
