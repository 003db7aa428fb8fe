"""The heap policy: applied once per process, and what it sets is what glibc reports."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import ctypes, ctypes.util, numpy as np
from ipuplan.heap import retain_freed_memory
ok = retain_freed_memory()
assert retain_freed_memory() == ok  # idempotent
a = np.ones(1 << 25)  # 256 MiB: mmap'd by default, from the heap under the policy
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.mallinfo2.restype = Info
i = libc.mallinfo2()
print(ok, i.hblkhd >= a.nbytes, i.arena >= a.nbytes)
"""


def test_large_arrays_come_from_the_heap_under_the_policy():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "True", "this platform's C library has no mallopt: the suite expects glibc"
    assert out[1] == "False" and out[2] == "True", out  # the array in the arena, not among the mmap'd blocks


def test_without_the_policy_a_large_array_is_mmapped():
    code = CODE.replace("ok = retain_freed_memory()", "ok = True").replace(
        "assert retain_freed_memory() == ok  # idempotent", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "True", out


SMALL_PAGES = """
import numpy as np
from ipuplan import heap
policy = heap.apply()
a = np.zeros(1 << 26, np.uint8)  # 64 MiB, touched page by page
a[::4096] = 1
huge = sum(int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.startswith("AnonHugePages"))
print(policy.small_pages, np._core.multiarray._get_madvise_hugepage(), huge)
"""


def test_small_pages_leave_numpy_arrays_without_huge_pages():
    """With the policy numpy no longer advises huge pages; where the kernel gives them only when advised
    (transparent_hugepage "madvise"), a touched 64 MiB array then holds none."""
    out = subprocess.run([sys.executable, "-c", SMALL_PAGES], capture_output=True, text=True, check=True).stdout
    applied, advised, huge_kib = out.split()
    assert applied == "True" and advised == "False", out
    try:
        mode = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        mode = ""
    if "[madvise]" in mode or "[never]" in mode:
        assert int(huge_kib) == 0, out
