"""Stub (dry runs only)."""


class DecoderOnlyLLMDataPacker:
    pass
