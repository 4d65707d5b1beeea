"""Qt front end: widgets, dialogs and plots over :mod:`gpudesk.services`.

Services never import this package; everything here runs on the GUI thread.
"""
