"""scripts/qt-deps.sh (run by scripts/run.sh): the Qt system libraries are checked before
the window starts; without root it prints the one command that installs what is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "qt-deps.sh"

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None or os.uname().sysname
                                != "Linux", reason="the apt-get path is Debian's")


def run(tmp_path: Path, ldconfig_lines: str, uid: int) -> subprocess.CompletedProcess[str]:
    shims = tmp_path / "bin"
    shims.mkdir(exist_ok=True)
    (shims / "ldconfig").write_text(f"#!/bin/sh\nprintf '%b' '{ldconfig_lines}'\n")
    (shims / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (shims / "apt-get").write_text("#!/bin/sh\necho apt-get-called \"$@\" >&2\n")
    for shim in shims.iterdir():
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    env.pop("QT_QPA_PLATFORM", None)
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60)


def test_missing_libraries_name_the_one_command_without_root(tmp_path: Path) -> None:
    have = "\\n".join(f"\\t{lib} (libc6,x86-64) => /usr/lib/{lib}" for lib in (
        "libxcb-cursor.so.0", "libEGL.so.1"))
    done = run(tmp_path, have, uid=1000)
    assert done.returncode == 1
    assert "sudo apt-get install -y " in done.stderr
    command = done.stderr.split("sudo apt-get install -y ", 1)[1].split()
    assert "libxcb-icccm4" in command and "libxcb-keysyms1" in command
    assert "libxcb-cursor0" not in command and "libegl1" not in command  # present


def test_as_root_it_installs_them(tmp_path: Path) -> None:
    done = run(tmp_path, "", uid=0)
    assert done.returncode == 0
    assert "apt-get-called install" in done.stderr and "libxcb-cursor0" in done.stderr


def test_nothing_to_do_when_all_are_there(tmp_path: Path) -> None:
    libs = ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1",
            "libxcb-shape.so.0", "libxcb-xinerama.so.0", "libxcb-randr.so.0",
            "libxcb-render-util.so.0", "libxcb-image.so.0", "libxkbcommon.so.0",
            "libxkbcommon-x11.so.0", "libEGL.so.1", "libGL.so.1", "libfontconfig.so.1",
            "libdbus-1.so.3"]
    done = run(tmp_path, "\\n".join(f"\\t{lib} (libc6) => /x" for lib in libs), uid=1000)
    assert done.returncode == 0 and done.stderr == ""
