"""The Watch page: live GPU dashboards, spend, budget alerts.

May import: ``ui.widgets``, services.
"""
