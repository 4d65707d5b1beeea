"""Regenerate the screenshots in docs/ (run under Xvfb: ``xvfb-run -s '-screen 0 1280x800x24'``).

Writes screenshot-plan-{en,zh_CN}[-{light,dark}].png, screenshot-preferences-*.png
and screenshot-welcome-*.png. Settings go to a temporary GPUDESK_HOME.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def main() -> int:
    os.environ["GPUDESK_HOME"] = tempfile.mkdtemp(prefix="gpudesk-shots-")
    from PySide6.QtWidgets import QApplication

    from gpudesk.services.catalog import load_catalog
    from gpudesk.services.settings import Settings
    from gpudesk.ui.i18n import install_translator
    from gpudesk.ui.main_window import MainWindow
    from gpudesk.ui.theme import apply_theme

    app = QApplication(sys.argv)

    def settle() -> None:
        for _ in range(20):
            app.processEvents()

    catalog = load_catalog()
    for language in ("en", "zh_CN"):
        install_translator(app, language)
        window = MainWindow(Settings(language=language, welcomed=True), catalog)
        window.resize(1280, 800)
        window.show()
        for theme in ("light", "dark"):
            apply_theme(app, theme)
            settle()
            window.grab().save(str(DOCS / f"screenshot-plan-{language}-{theme}.png"))
            if theme == "light":
                window.grab().save(str(DOCS / f"screenshot-plan-{language}.png"))
        apply_theme(app, "light")
        prefs = window.show_preferences()
        settle()
        prefs.adjustSize()
        settle()
        prefs.grab().save(str(DOCS / f"screenshot-preferences-{language}.png"))
        prefs.reject()
        window.settings.welcomed = False
        welcome = window.maybe_show_welcome()
        assert welcome is not None
        welcome.cloud_button.click()
        settle()
        welcome.adjustSize()
        settle()
        welcome.grab().save(str(DOCS / f"screenshot-welcome-{language}.png"))
        welcome.finished.disconnect()  # do not save settings from the screenshot run
        welcome.reject()
        window.close()
        settle()
    return 0


if __name__ == "__main__":
    sys.exit(main())
