"""Accounts and Instances pages and the Launch dialog.

May import: ``ui.widgets``, services.
"""
