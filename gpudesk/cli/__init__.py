"""The command line: ``gpudesk <verb>``, a thin face over the same services as the window.

May import: ``gpudesk.calc``, every room of ``gpudesk.services``, ``gpudesk.agent``
(the agent's bundle and rules) and the leaves (``gpudesk.logs``, ``gpudesk.i18n_marks``,
``gpudesk.resources``); never Qt (``gpudesk.ui``). ``entry`` builds the parser and runs
a verb; each other module owns a group of verbs (``cloud``, ``machine``, ``remote``,
``runs``, ``spend``, ``budget``, ``watch``) and ``args`` their shared argument types.

This file stays light: ``gpudesk sync`` imports ``gpudesk.cli.remote`` alone, and
everything a package ``__init__`` imports would be paid for on that quick path.
"""
