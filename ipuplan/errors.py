"""The one exception tree: every user-facing error names where it came from and what is valid."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A place in an input file (1-based line; 0 when the whole file is meant)."""

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class IpuplanError(Exception):
    """Base of every error ipuplan raises on purpose; `exit_code` is what the CLI returns."""

    exit_code = 70

    def render(self) -> str:
        return str(self)


class InputError(IpuplanError):
    """Bad input from the user: exit code 2, message `file:line: key: problem; valid`."""

    exit_code = 2

    def __init__(self, loc: Loc | str | None, key: str | None, problem: str, valid: str | None = None):
        self.loc = loc
        self.key = key
        self.problem = problem
        self.valid = valid
        super().__init__(self.render())

    def render(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(f"{self.loc}: ")
        if self.key:
            parts.append(f"{self.key}: ")
        parts.append(self.problem)
        if self.valid:
            parts.append(f"; {self.valid}")
        return "".join(parts)


class YamlError(InputError):
    """The file is not a readable, sane YAML mapping."""


class ModelError(InputError):
    """A model declaration is inconsistent or out of range."""


class TargetError(InputError):
    """A target declaration is inconsistent or out of range."""


class WeightsError(InputError):
    """A weights file does not match the model (names, shapes, dtypes)."""


class ArrayInputError(InputError):
    """A numpy input (pixels) has the wrong shape or dtype."""


class Unfinished(IpuplanError):
    """A question whose answer needs a verdict that came back UNKNOWN (exit code 3)."""

    exit_code = 3


class Interrupted(IpuplanError):
    """The user interrupted the command (Ctrl-C): exit code 130, nothing half-written."""

    exit_code = 130


class IRError(IpuplanError):
    """The IR violates an invariant: a bug in a transformation, never user input."""
