"""Foundations every room shares: where files live, settings, errors, redaction,
atomic writes, the normalised machine states.

May import: the standard library, ``gpudesk.i18n_marks``, ``gpudesk.resources``.
No other room of ``gpudesk.services``.
"""
