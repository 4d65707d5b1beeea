"""Training runs on a machine: detached launch under torchrun, follow, pull,
stop and resume, and recovery on a new machine after a spot reclaim.

May import: ``services.core``, ``services.money``, ``services.cloud``,
``services.remote``, ``services.storage`` (a run's bucket), ``gpudesk.training``
(its launcher environment), ``gpudesk.agent`` (its standard-library modules that the
desktop and the machine share, such as a public dataset's listing and version).
"""
