"""Runs on another machine, reached with the user's own ``ssh`` (``HOST:PATH``, as scp reads it).

``address`` reads ``HOST:PATH``; ``link`` runs the far side's a1x-tui over ssh (one command, or a stream
that reconnects) and forwards a supervised run's control socket. No Textual, no import of the commands
or the app: ``--check``, ``watch`` and ``attach`` (``a1x_tui.ui.feeds.remote``) use it alike.
"""
