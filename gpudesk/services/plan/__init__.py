"""Planning: which offers fit a sized job, ranked by the cost to finish it.

May import: ``services.core``, ``services.cloud`` (the catalog), ``gpudesk.calc``
(the sizing maths), ``services.runs`` (a run's own checkpoint and restart times, for a
spot offer's expected cost).
"""
