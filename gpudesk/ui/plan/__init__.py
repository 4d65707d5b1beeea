"""The Plan page: model form, memory bar, offers table, trace dialog.

May import: ``ui.widgets``, services, ``gpudesk.calc``.
"""
