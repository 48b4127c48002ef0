"""TOML templates and pipeline definitions shipped with a1x-tui (package data)."""
