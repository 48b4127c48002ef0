"""Stub (dry runs only)."""


class Dataset:
    pass
