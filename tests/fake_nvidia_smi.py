#!/usr/bin/env python3
"""A stand-in ``nvidia-smi`` that replays captures from shared/reference/nvidia-smi.md.

Installed as ``nvidia-smi`` on PATH by tests/fixtures_agent.py (also usable on
the loopback sshd machine). Speaks the subset gpudesk uses:

* ``nvidia-smi`` (the table head bootstrap reads), ``nvidia-smi -L``;
* ``--query-gpu=F,...`` with any of the fields below, ``--format=csv[,noheader][,nounits]``,
  and ``-lms N`` / ``-l N``: one row per GPU per interval from its own loop, as
  the real tool does (header once, then rows), until killed;
* ``--query-compute-apps=F,...`` (gpu_uuid, pid, process_name, used_memory or
  used_gpu_memory): the header only when nothing runs, like the real tool.

Where the values come from: utilisation and memory of ``v100`` are the AAU
AI-Cloud V100 32GB capture; name, memory, utilisation and temperature of
``a100`` (and of the 8-GPU ``a100x8`` rows) the A100-SXM4-40GB capture on
driver 535.129.03; the ``VLLM::EngineCore`` processes and their memory are the
compute-apps capture. Fields those captures lack (power, UUIDs) hold typical
values for the card. Missing-value spellings are the reference's: ``[N/A]``,
``[Not Supported]``, bare ``N/A`` (old drivers); ``mig`` has the ``[N/A]``
utilisation a MIG-enabled GPU reports; ``units`` prints units despite
``nounits`` (another driver's habit); ``missing`` also prints an error line.

Environment: ``FAKE_SMI_SCENARIO`` (default ``a100``); ``FAKE_SMI_LOG`` — a
file that gets one JSON line per start and exit (pid, argv) so tests can count
processes; ``FAKE_SMI_EXIT_AFTER`` — in loop mode, exit after N samples.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

FIELDS = ("index", "uuid", "name", "utilization.gpu", "memory.used", "memory.total",
          "temperature.gpu", "power.draw", "power.limit")
UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "memory.total": "MiB",
         "power.draw": "W", "power.limit": "W"}
HEADER_NAMES = {"utilization.gpu": "utilization.gpu [%]", "memory.used": "memory.used [MiB]",
                "memory.total": "memory.total [MiB]", "power.draw": "power.draw [W]",
                "power.limit": "power.limit [W]", "used_memory": "used_gpu_memory [MiB]",
                "used_gpu_memory": "used_gpu_memory [MiB]"}


def gpu(index: int, uuid: str, name: str, util: str, used: str, total: str, temp: str,
        power: str, limit: str) -> dict[str, str]:
    values = (str(index), uuid, name, util, used, total, temp, power, limit)
    return dict(zip(FIELDS, values))  # noqa: B905 - the stand-in runs on any python3


A100_UUID = "GPU-4d2b3c1e-6a0f-2b7e-93c1-0e5f2a7d8b14"
V100_UUID = "GPU-8f1a0c2d-31b4-9e5a-7c60-d2b9e4f1a305"

SCENARIOS: dict[str, dict[str, Any]] = {
    "a100": {
        "driver": "535.129.03", "cuda": "12.2",
        "samples": [[gpu(0, A100_UUID, "NVIDIA A100-SXM4-40GB", "0", "4", "40960", "31",
                         "52.32", "400.00")]],
        "procs": [],
    },
    "v100": {
        "driver": "450.80.02", "cuda": "11.0",
        "samples": [
            [gpu(0, V100_UUID, "Tesla V100-SXM2-32GB", "99", "30994", "32480", "64",
                 "251.43", "300.00")],
            [gpu(0, V100_UUID, "Tesla V100-SXM2-32GB", "99", "30994", "32480", "65",
                 "249.87", "300.00")],
        ],
        "procs": [(V100_UUID, "3858903", "VLLM::EngineCore", "6265"),
                  (V100_UUID, "3880364", "VLLM::EngineCore", "5530")],
    },
    "missing": {
        "driver": "470.223.02", "cuda": "11.4",
        "error_line": "Unable to determine the device handle for GPU 0000:00:1E.0: Unknown Error",
        "samples": [[
            gpu(0, "GPU-1b6e7d1c-0a53-4c3e-8f3e-6b1f1c2e9a70", "Tesla K80", "37", "2048",
                "11441", "N/A", "N/A", "N/A"),
            gpu(1, "[N/A]", "NVIDIA GeForce RTX 3090", "12", "1024", "24576", "45", "[N/A]",
                "[Not Supported]"),
        ]],
        "procs": [("GPU-1b6e7d1c-0a53-4c3e-8f3e-6b1f1c2e9a70", "2211", "python3", "[N/A]")],
    },
    "mig": {
        "driver": "535.129.03", "cuda": "12.2",
        "mig": {0: ["MIG 3g.20gb     Device  0: (UUID: MIG-5a2d7f1e-0b9c-5e41-a3f2-7c8d9e0f1a2b)",
                    "MIG 3g.20gb     Device  1: (UUID: MIG-c1e0b3a4-8d2f-5f6e-9a7b-1c2d3e4f5a6b)"]},
        "samples": [[
            gpu(0, A100_UUID, "NVIDIA A100-SXM4-40GB", "[N/A]", "13", "40960", "31", "54.91",
                "400.00"),
            gpu(1, "GPU-9e7c2a10-44d1-0f3b-b6a5-3d8c1e2f4a56", "NVIDIA A100-SXM4-40GB", "87",
                "30112", "40960", "58", "312.40", "400.00"),
        ]],
        "procs": [],
    },
    "units": {
        "driver": "418.87.01", "cuda": "10.1",
        "samples": [[gpu(0, "GPU-0c3f9a7e-12b4-4d5e-8f6a-7b8c9d0e1f2a", "Tesla T4", "45 %",
                         "3012 MiB", "15360 MiB", "51", "31.12 W", "70.00 W")]],
        "procs": [],
    },
}

_A100X8_UTIL = ("97", "98", "96", "99", "97", "98", "95", "99")
SCENARIOS["a100x8"] = {
    "driver": "535.129.03", "cuda": "12.2",
    "samples": [[gpu(i, f"GPU-4d2b3c1e-6a0f-2b7e-93c1-0e5f2a7d8b{10 + i}",
                     "NVIDIA A100-SXM4-40GB", _A100X8_UTIL[(i + k) % 8], str(30994 + 16 * i),
                     "40960", str(60 + i), f"{330 + 3 * i + k}.25", "400.00")
                 for i in range(8)] for k in range(3)],
    "procs": [(f"GPU-4d2b3c1e-6a0f-2b7e-93c1-0e5f2a7d8b{10 + i}", str(41000 + i), "python3",
               str(30800 + 16 * i)) for i in range(8)],
}


def log(event: str, **extra: Any) -> None:
    path = os.environ.get("FAKE_SMI_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "event": event, "argv": sys.argv[1:],
                                **extra}) + "\n")


def value(field: str, raw: str, nounits: bool) -> str:
    if nounits or field not in UNITS or raw.startswith("[") or raw == "N/A" or " " in raw:
        return raw
    return f"{raw} {UNITS[field]}"


def table(sc: dict[str, Any]) -> str:
    rows = [
        "+-----------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {sc['driver']:<17} Driver Version: {sc['driver']:<12} "
        f"CUDA Version: {sc['cuda']:<5}    |",
        "|-------------------------------+----------------------+----------------------+",
    ]
    for g in sc["samples"][0]:
        rows.append(f"| {g['index']:>3}  {g['name'][:24]:<24} | {g['memory.used']:>8}MiB / "
                    f"{g['memory.total']}MiB | {g['utilization.gpu']:>6} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    sc = SCENARIOS[os.environ.get("FAKE_SMI_SCENARIO", "a100")]
    log("start")
    opts: dict[str, str] = {}
    it = iter(argv)
    for arg in it:
        if arg.startswith("--") and "=" in arg:
            k, v = arg.split("=", 1)
            opts[k] = v
        elif arg in ("-lms", "-l"):
            opts[arg] = next(it, "1")
        elif arg in ("-L", "--list-gpus"):
            opts["-L"] = ""
        else:
            print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
            return 2
    fmt = opts.get("--format", "csv").split(",")
    noheader, nounits = "noheader" in fmt, "nounits" in fmt
    if not opts:
        print(table(sc))
        return 0
    if "-L" in opts:
        for g in sc["samples"][0]:
            print(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})")
            for line in sc.get("mig", {}).get(int(g["index"]), []):
                print(f"  {line}")
        return 0
    if "--query-compute-apps" in opts:
        fields = opts["--query-compute-apps"].split(",")
        names = {"gpu_uuid": 0, "pid": 1, "process_name": 2, "used_memory": 3,
                 "used_gpu_memory": 3}
        bad = [f for f in fields if f not in names]
        if bad:
            print(f'Field "{bad[0]}" is not a valid field to query.')
            return 2
        if not noheader:
            print(", ".join(HEADER_NAMES.get(f, f) for f in fields))
        for proc in sc["procs"]:
            cells = [proc[0], proc[1], proc[2], proc[3]]
            out = []
            for f in fields:
                raw = cells[names[f]]
                unit = not nounits and names[f] == 3 and not raw.startswith("[")
                out.append(f"{raw} MiB" if unit else raw)
            print(", ".join(out))
        return 0
    if "--query-gpu" not in opts:
        print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
        return 2
    fields = opts["--query-gpu"].split(",")
    bad = [f for f in fields if f not in FIELDS]
    if bad:
        print(f'Field "{bad[0]}" is not a valid field to query.')
        return 2
    interval = None
    if "-lms" in opts:
        interval = int(opts["-lms"]) / 1000
    elif "-l" in opts:
        interval = float(opts["-l"])
    exit_after = int(os.environ.get("FAKE_SMI_EXIT_AFTER", "0") or 0)

    def on_term(signum: int, frame: Any) -> None:
        log("exit", signal=signum)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    if not noheader:
        print(", ".join(HEADER_NAMES.get(f, f) for f in fields), flush=True)
    if sc.get("error_line"):
        print(sc["error_line"], flush=True)
    n = 0
    while True:
        for g in sc["samples"][n % len(sc["samples"])]:
            print(", ".join(value(f, g[f], nounits) for f in fields))
        sys.stdout.flush()
        n += 1
        if interval is None or (exit_after and n >= exit_after):
            log("exit", samples=n)
            return 0
        time.sleep(interval)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # the reader went away: as the real tool, die quietly
        log("exit", reason="broken pipe")
        os._exit(0)
