"""The demo stage programs: each is run as ``python -m a1x_tui.demo.programs.<name>`` by the supervisor."""
