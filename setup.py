"""Build hook for the optional C scanner; every other setting is in pyproject.toml.

``diagnostics._scan`` speeds up the live follower's marker search (docs/live.md). It is optional:
without a C compiler the install goes on and the package uses its pure-Python search.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("diagnostics._scan", ["diagnostics/_scan.c"], optional=True)])
