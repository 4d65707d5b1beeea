"""Install gpudesk's (and Qt's own) translators, and swap them at run time.

Installing or removing a ``QTranslator`` makes Qt post ``QEvent.LanguageChange``
to every widget, so widgets only need a ``changeEvent`` that calls their
``retranslate()``; nothing has to be rebuilt.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QLibraryInfo
from PySide6.QtCore import QLocale
from PySide6.QtCore import QTranslator

from gpudesk import i18n_marks
from gpudesk.resources import resource_path

LANGUAGES: tuple[str, ...] = ("system", "en", "zh_CN")

# Kept at module level: Qt does not own installed translators, and a translator
# that Python collects is silently dropped.
_installed: list[QTranslator] = []


def resolve_language(language: str) -> str:
    """``"system"`` becomes ``"zh_CN"`` for any Chinese OS locale, else ``"en"``."""
    if language == "system":
        name = QLocale.system().name()  # e.g. "zh_CN", "zh_TW", "en_US"
        return "zh_CN" if name.startswith("zh") else "en"
    return language if language in ("en", "zh_CN") else "en"


def translation_file(language: str) -> str:
    return str(resource_path("translations", f"gpudesk_{language}.qm"))


def install_translator(app: QCoreApplication, language: str) -> str:
    """Switch the UI to ``language`` ("system", "en", "zh_CN"); return the one in effect.

    English is the source language, so "en" just removes the translators. A
    missing ``.qm`` falls back to English rather than failing start-up.
    """
    for old in _installed:
        app.removeTranslator(old)
    _installed.clear()
    # names the core puts into its messages (a cloud's title) follow the window's language
    i18n_marks.use_translate(QCoreApplication.translate)
    effective = resolve_language(language)
    if effective == "en":
        return effective
    ours = QTranslator(app)
    if not ours.load(translation_file(effective)):
        return "en"
    app.installTranslator(ours)
    _installed.append(ours)
    qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    qtbase = QTranslator(app)
    if qtbase.load(f"qtbase_{effective}", qt_dir):  # QMessageBox/QFileDialog buttons
        app.installTranslator(qtbase)
        _installed.append(qtbase)
    return effective


def current_language() -> str:
    """The language of the installed translators ("en" when none)."""
    return "zh_CN" if _installed else "en"
