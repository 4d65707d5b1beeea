"""The main window and app-wide dialogs, theme and language.

May import: every other ui room, services.
"""
