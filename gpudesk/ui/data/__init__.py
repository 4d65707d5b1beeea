"""The Data page: datasets pushed once to a bucket, listed, pushed and removed (issue 32).

May import: ``ui.widgets``, services.
"""
