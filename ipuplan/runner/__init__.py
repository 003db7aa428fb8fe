"""Executing packages: the Device interface and the IPU21 emulator."""

from .device import Device
from .emulator import Emulator
from .memory import RunError

__all__ = ["Device", "Emulator", "RunError"]
