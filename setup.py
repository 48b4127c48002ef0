"""Build hook for the optional C scanner; every other setting is in pyproject.toml.

``a1x_diagnostics._scan`` speeds up the live follower's marker search (docs/live.md). It is optional:
without a C compiler the install goes on and the package uses its pure-Python search.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("a1x_diagnostics._scan", ["a1x_diagnostics/_scan.c"], optional=True)])
