"""What a runner is: load a package, then call its host functions. The emulator is the one implementation
today; a hardware runner would implement the same two methods."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np


class Device(ABC):
    @abstractmethod
    def load(self, package: str | Path) -> dict:
        """Validate and load a package; returns its manifest."""

    @abstractmethod
    def call(self, name: str, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`initialize` (parameters and constants by name, logical float32 values) or `run` (inputs by name,
        one batch) -> outputs by name (logical float32)."""
