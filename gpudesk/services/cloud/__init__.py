"""Renting: the provider interface and its implementations (``providers/``),
accounts and credentials (keyring only), the offer catalog and live prices,
launch, reconcile after a crash, stop/start/terminate.

May import: ``services.core``, ``services.money``.
A new cloud plugs in as ``providers/<name>.py`` (+ ``<name>_errors.py``)
implementing ``providers.base.Provider``, registered in ``accounts.py``.
"""
