from a1x_tui.cli import entry

entry()
