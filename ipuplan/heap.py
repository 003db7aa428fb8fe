"""Process heap policy: keep freed memory for reuse instead of handing it back to the operating system.

The package check's replay allocates and frees arrays of hundreds of megabytes (its tag memory alone is 1.9 GB).
glibc serves each from a fresh mmap and unmaps it on free, so every allocation pays first-touch page faults again;
on a virtual machine whose host reclaims free guest pages that is about 100 MB/s (the SigLIP b2 package check:
92.2 s with glibc's default policy, 52.2 s with this one, peak RSS 3.40 and 3.43 GiB; bench/RESULTS.md, "The
package check"). With `M_MMAP_MAX = 0` and no trimming every block comes from the heap and stays mapped after it is
freed. Only the processes ipuplan owns set it (the command line, the sweep's workers, the test suite); elsewhere a
no-op."""

from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
_applied = False


def retain_freed_memory() -> bool:
    """Set the policy once for this process; False where the C library has no glibc `mallopt`."""
    global _applied
    if _applied:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _applied = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    return _applied
