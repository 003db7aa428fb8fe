"""ipuplan: a provable memory planner and compiler for vision transformers on IPU21-class tiles.

The Python API (`ipuplan.api`, loaded on first use): `solve`, `build`, `run`, `check`."""

__version__ = "0.1.0"

_API = ("solve", "build", "run", "check", "Solved", "Checked", "Ran")


def __getattr__(name: str):
    if name in _API:  # imported lazily: `import ipuplan.x` stays light
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'ipuplan' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
