"""Money: the ledger of every machine that can bill (written before each cloud
call), what each has cost, and the budgets that watch it.

May import: ``services.core``. Never a cloud SDK: the ledger must open and
price machines with no provider installed.
"""
