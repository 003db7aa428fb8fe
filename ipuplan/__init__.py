"""ipuplan: a provable memory planner and compiler for vision transformers on IPU21-class tiles."""

__version__ = "0.1.0"
