"""Stub for local dry runs of the fixture recorder (tools/fixture_recorder/dry_run); not Cosmos-RL or PyTorch."""
