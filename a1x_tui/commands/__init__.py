"""One module per CLI command: ``add_arguments(parser)`` and ``run(args) -> exit code``.

Command modules import their engines inside ``run`` so that ``a1x-tui --help`` and the headless
commands stay fast and never import Textual.
"""
