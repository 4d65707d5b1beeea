"""Qt front end over :mod:`gpudesk.services`, in rooms by page.

    widgets   helpers every page shares (task runner, money formats, answers,
              host-key question, machine combo, tray, model types)
    plan      the Plan page: form, memory bar, offers table, trace dialog
    machines  Accounts and Instances pages, the Launch dialog
    run       the Run page
    watch     the Watch page: dashboards, plots, budget alerts
    data      the Data page: datasets listed, pushed and removed
    shell     the main window and app-wide dialogs (welcome, preferences,
              about, crash), theme and language

Pages import ``widgets`` and services, never each other; ``shell`` assembles
them. Services never import this package; everything here runs on the GUI
thread. ``tests/test_imports.py`` enforces the direction.
"""
