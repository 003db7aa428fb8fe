"""Model declarations: YAML schema and loader, expansion into the IR, weights."""

from .spec import ModelSpec, load_model
from .build import build_graph

__all__ = ["ModelSpec", "load_model", "build_graph"]
