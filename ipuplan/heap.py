"""Process memory policy: keep freed memory for reuse, and back large arrays with small pages.

Both answer what first-touch page faults cost on a virtual machine whose host reclaims free guest memory (this
project's 2-core machine: bench/RESULTS.md, "The package check" and "Small pages").

- The package check's replay allocates and frees arrays of hundreds of megabytes (its tag memory alone is 1.9 GB).
  glibc serves each from a fresh mmap and unmaps it on free, so every allocation pays its page faults again (the
  SigLIP b2 package check: 92.2 s with glibc's default policy, 52.2 s with `M_MMAP_MAX = 0` and no trimming,
  which serve every block from the heap and keep it mapped after it is freed).
- numpy asks for transparent huge pages (madvise MADV_HUGEPAGE) on every array of 4 MiB or more. A huge page's
  first touch makes the kernel find (compacting if need be) and clear 2 MiB, and commits all of it however little
  is used: the emulator's tile memory is 1.8 GB of which a small model touches scattered rows (`ipuplan run
  --compare` on PE-Core T/16 at 2 layers: 30.8 s and 2.11 GB before this policy and `lazy_zeros`, 4.8 s and
  0.74 GB after; bench/RESULTS.md, "Small pages").

Arrays that are large and mostly untouched (the emulator's tile memory) take `lazy_zeros` instead of np.zeros: pages
of their own straight from the operating system, zero until touched, whatever the policy; from a retained heap,
np.zeros would clear (and so touch) every byte.

Only the processes ipuplan owns apply the policy (the command line, the sweep's workers, the test suite); where the C
library has no glibc `mallopt` or numpy no switch, that part is a no-op."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from dataclasses import dataclass

import numpy as np

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
_retained = False


@dataclass(frozen=True)
class Policy:
    """What `apply` could set in this process."""

    retained: bool  # freed memory stays in the heap
    small_pages: bool  # numpy no longer asks for huge pages


def retain_freed_memory() -> bool:
    """Set the heap policy once for this process; False where the C library has no glibc `mallopt`."""
    global _retained
    if _retained:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _retained = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    return _retained


def use_small_pages() -> bool:
    """Turn off numpy's huge-page advice for arrays allocated from now on (what NUMPY_MADVISE_HUGEPAGE=0 does
    at numpy's import); False where this numpy has no such switch."""
    switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True


def apply() -> Policy:
    """The whole policy, once per process (repeating it changes nothing)."""
    return Policy(retain_freed_memory(), use_small_pages())


def lazy_zeros(shape: tuple[int, ...], dtype) -> np.ndarray:
    """A zero array on a private anonymous mapping of its own: a page costs only when first touched, small pages
    (no advice), copied on write in a forked child, returned to the system when the array is freed."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if n == 0:
        return np.zeros(shape, dt)
    return np.frombuffer(mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS), dt).reshape(shape)
