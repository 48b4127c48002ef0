"""a1x-tui: drive, watch and diagnose Alpamayo RL post-training from a terminal."""

__version__ = "0.1.0"
