"""Render ``resources/icons/gpudesk.svg`` into the PNG, ICO and ICNS files the builds use.

    python packaging/make_icons.py                  # refresh the committed icons
    python packaging/make_icons.py --sizes build/icons
    python packaging/make_icons.py --iconset build/gpudesk.iconset   # for macOS iconutil

Always writes, next to the SVG:

* ``gpudesk.png``  - 256 px (window icon, Linux ``.desktop`` icon);
* ``gpudesk.ico``  - 16, 24, 32, 48, 64, 128 and 256 px (Windows exe and installer);
* ``gpudesk.icns`` - 16 to 1024 px (macOS ``.app``).

The SVG is drawn with Qt's ``QSvgRenderer`` (PySide6.QtSvg, in PySide6-Essentials),
so nothing but PySide6 is needed. Qt's own ICO writer stores one image per file
and Qt cannot write ICNS at all, so both containers are written here by hand:
they are simple lists of PNG images (PNG entries in ICO need Windows Vista or
later; PNG entries in ICNS need macOS 10.7 or later). ``build_macos.sh``
prefers Apple's ``iconutil`` on an ``--iconset`` folder and falls back to the
committed ``gpudesk.icns``.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ICONS = REPO / "resources" / "icons"
SVG = ICONS / "gpudesk.svg"

PNG_SIZES = (16, 32, 48, 64, 128, 256, 512, 1024)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# ICNS element type -> pixel size (the @2x types hold the doubled size).
ICNS_TYPES = (
    ("icp4", 16), ("icp5", 32), ("icp6", 64), ("ic07", 128), ("ic08", 256),
    ("ic09", 512), ("ic10", 1024), ("ic11", 32), ("ic12", 64), ("ic13", 256), ("ic14", 512),
)
# macOS .iconset file name -> pixel size, as iconutil expects.
ICONSET = {
    f"icon_{base}x{base}{suffix}.png": base * scale
    for base in (16, 32, 128, 256, 512)
    for suffix, scale in (("", 1), ("@2x", 2))
}


class Renderer:
    """Draws the SVG at any size and returns PNG bytes."""

    def __init__(self, svg: Path) -> None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtGui import QGuiApplication
        from PySide6.QtSvg import QSvgRenderer

        self._app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
        self._svg = QSvgRenderer(str(svg))
        if not self._svg.isValid():
            raise SystemExit(f"cannot read {svg}")
        self._cache: dict[int, bytes] = {}

    def png(self, size: int) -> bytes:
        if size not in self._cache:
            from PySide6.QtCore import QBuffer
            from PySide6.QtCore import QByteArray
            from PySide6.QtCore import QIODevice
            from PySide6.QtCore import QRectF
            from PySide6.QtCore import Qt
            from PySide6.QtGui import QImage
            from PySide6.QtGui import QPainter

            image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
            image.fill(Qt.GlobalColor.transparent)
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            self._svg.render(painter, QRectF(0, 0, size, size))
            painter.end()
            data = QByteArray()
            buffer = QBuffer(data)
            buffer.open(QIODevice.OpenModeFlag.WriteOnly)
            if not image.save(buffer, "PNG"):
                raise SystemExit(f"cannot encode a {size} px PNG")
            buffer.close()
            self._cache[size] = bytes(data.data())
        return self._cache[size]


def ico_bytes(images: list[tuple[int, bytes]]) -> bytes:
    """An ICO file whose entries are PNG images: ICONDIR, ICONDIRENTRYs, then the data."""
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = len(header) + 16 * len(images)
    entries, blobs = [], []
    for size, data in images:
        side = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        entries.append(struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset))
        blobs.append(data)
        offset += len(data)
    return header + b"".join(entries) + b"".join(blobs)


def icns_bytes(images: list[tuple[str, bytes]]) -> bytes:
    """An ICNS file: ``icns`` + total length, then (type, length, PNG data) elements."""
    body = b"".join(
        kind.encode("ascii") + struct.pack(">I", 8 + len(data)) + data for kind, data in images
    )
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"wrote {path} ({len(data):,} bytes)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svg", type=Path, default=SVG)
    parser.add_argument("--out", type=Path, default=ICONS, help="folder for png/ico/icns")
    parser.add_argument("--sizes", type=Path, help="also write gpudesk-<N>.png for 16..1024")
    parser.add_argument("--iconset", type=Path, help="also write a macOS .iconset folder")
    args = parser.parse_args(argv)

    render = Renderer(args.svg)
    write(args.out / "gpudesk.png", render.png(256))
    write(args.out / "gpudesk.ico", ico_bytes([(s, render.png(s)) for s in ICO_SIZES]))
    write(args.out / "gpudesk.icns", icns_bytes([(k, render.png(s)) for k, s in ICNS_TYPES]))
    if args.sizes:
        for size in PNG_SIZES:
            write(args.sizes / f"gpudesk-{size}.png", render.png(size))
    if args.iconset:
        for name, size in ICONSET.items():
            write(args.iconset / name, render.png(size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
