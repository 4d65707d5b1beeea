"""Training runs on a machine: detached launch under torchrun, follow, pull,
stop and resume, and recovery on a new machine after a spot reclaim.

May import: ``services.core``, ``services.money``, ``services.cloud``,
``services.remote``, ``gpudesk.training`` (its launcher environment).
"""
