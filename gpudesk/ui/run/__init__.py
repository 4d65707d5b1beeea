"""The Run page: start, follow, stop and resume training runs.

May import: ``ui.widgets``, services.
"""
