"""Qt-free services, in rooms by capability.

    core    paths, settings, errors, redaction, atomic files, machine states
    money   ledger (what bills), spend (what it cost), budgets
    cloud   providers (AWS, Tencent), accounts, credentials, catalog, prices,
            launch, reconcile, machine actions
    storage the user's bucket (S3/COS/OSS): names, clients, a run's outputs, prices
    remote  ssh, host keys, ssh config, sync, bootstrap, agent deploy, telemetry
    runs    detached training runs, run control, spot recovery
    plan    offers ranked by the cost to finish a sized job

A room imports only from the rooms listed before it in its own docstring
(core < money < cloud < storage < remote < runs; plan sits on cloud). Nothing under this
package imports Qt. ``tests/test_imports.py`` enforces both.
"""
