"""Verdict grids: models x targets x batches x depths x option values, each case solved and checked in its own
process on Ray."""
