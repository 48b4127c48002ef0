"""Runs the Alpamayo RL pipeline as supervised stages, detached from any client."""
