"""A plain ``pip install .`` (a wheel, as pipx makes) finds its catalog and translations."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_ships_resources_and_the_installed_app_finds_them(tmp_path: Path) -> None:
    out = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out), str(REPO)], check=True, timeout=300,
                   capture_output=True)
    (wheel,) = out.glob("gpudesk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # The calculator's room, and its old name that stays importable.
    assert {"gpudesk/calc/__init__.py", "gpudesk/calc/sizing.py", "gpudesk/sizing.py"} <= set(names)
    want = {f"resources/{p.relative_to(REPO / 'resources')}"
            for p in (REPO / "resources").rglob("*") if p.is_file()}
    shipped = {n.split("/share/gpudesk/", 1)[1] for n in names if "/share/gpudesk/" in n}
    assert want <= shipped, want - shipped

    # Installed into a prefix of its own, away from the checkout, the way an installer
    # lays a wheel out (purelib into site-packages, the .data/data folder into the prefix;
    # never pip here: it would uninstall the editable gpudesk this suite runs from).
    prefix = tmp_path / "prefix"
    site = prefix / "lib" / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            head, _, rest = name.partition(".data/data/")
            dest = prefix / rest if rest and "/" not in head else site / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(zf.read(name))
    probe = ("import sys; sys.prefix = sys.argv[1]; import gpudesk.resources as r; "
             "print(r.resource_path('catalog', 'offers.csv'), r.__file__)")
    env = dict(os.environ, PYTHONPATH=str(site))
    found = subprocess.run([sys.executable, "-c", probe, str(prefix)], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    path, module = (Path(p) for p in found.stdout.split())
    assert site in module.parents, module  # the installed copy, not the checkout
    assert path.is_file() and prefix in path.parents, path
