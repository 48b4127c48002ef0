"""Log parsing, metrics, detectors, findings and reports for Cosmos-RL / Alpamayo RL runs.

Pure functions over typed events (``a1x_diagnostics.events``) wherever possible; no Textual import
anywhere in this package.
"""
