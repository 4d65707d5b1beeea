"""Reaching a machine: SSH with pinned host keys, the managed ssh config, code
sync, bootstrap checks, the on-machine agent (deploy, rules) and its telemetry.

May import: ``services.core``, ``services.money``, ``services.cloud``,
``gpudesk.agent`` (uploaded to the machine).
"""
