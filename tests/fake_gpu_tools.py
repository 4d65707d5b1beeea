"""Stand-ins for a GPU machine's tools, for bootstrap tests over the loopback sshd.

:func:`make_tools` fills a folder with ``bin/nvidia-smi`` (the replaying stand-in,
``fake_nvidia_smi.py``), ``bin/nvcc`` (prints ``nvcc --version`` as CUDA 12.x
prints it) and ``py/torch/`` (a tiny package with ``__version__``,
``version.cuda`` and ``cuda.is_available()``/``device_count()``). The test hands
``bin`` to bootstrap as a PATH prefix and ``py`` as PYTHONPATH, so the real
remote ``python3`` imports the stand-in torch.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from fixtures_agent import install_fake_smi

NVCC_VERSION = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2023 NVIDIA Corporation
Built on Mon_Apr__3_17:16:06_PDT_2023
Cuda compilation tools, release {release}, V{release}.105
Build cuda_{release}.r{release}/compiler.32688072_0
"""

TORCH_INIT = '''\
"""A stand-in torch for bootstrap tests: only what the probe reads."""
import types

__version__ = {version!r}
version = types.SimpleNamespace(cuda={cuda!r})


class _Cuda:
    @staticmethod
    def is_available():
        if {warning!r}:
            import warnings
            warnings.warn({warning!r})
        return {available!r}

    @staticmethod
    def device_count():
        return {devices!r}


cuda = _Cuda()
'''


@dataclass(frozen=True)
class FakeTorch:
    version: str = "2.4.1+cu121"
    cuda: str | None = "12.1"
    available: bool = True
    devices: int = 1
    warning: str = ""


@dataclass(frozen=True)
class Tools:
    bin: Path
    pythonpath: Path
    env: dict[str, str]


def make_tools(root: Path, *, smi_scenario: str | None = "a100", nvcc: str | None = "12.1",
               torch: FakeTorch | None = None) -> Tools:
    """The folder of stand-ins; ``None`` leaves that tool out (no smi, no nvcc, no torch)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    env: dict[str, str] = {}
    if smi_scenario is not None:
        install_fake_smi(bin_dir, sys.executable)
        env["FAKE_SMI_SCENARIO"] = smi_scenario
    if nvcc is not None:
        exe = bin_dir / "nvcc"
        exe.write_text("#!/bin/sh\ncat <<'EOF'\n" + NVCC_VERSION.format(release=nvcc)
                       + "EOF\n", encoding="utf-8")
        exe.chmod(0o755)
    py = root / "py"
    py.mkdir(exist_ok=True)
    if torch is not None:
        (py / "torch").mkdir(exist_ok=True)
        (py / "torch" / "__init__.py").write_text(TORCH_INIT.format(
            version=torch.version, cuda=torch.cuda, available=torch.available,
            devices=torch.devices, warning=torch.warning), encoding="utf-8")
    env["PYTHONPATH"] = str(py)
    return Tools(bin_dir, py, env)
