"""Qt-free, async services: providers, credentials, ssh, sync, runs, telemetry, spend, state.

Nothing under this package may import Qt; ``tests/test_imports.py`` enforces it.
"""
