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


def test_lazy_zeros_cost_only_the_pages_touched():
    """The emulator's tile memory: a 1 GiB zero array, one row of 64 B per MiB written, lies on a mapping of its
    own that holds about those pages (not the heap, where np.zeros would put it and clear every byte), and reads
    back zero elsewhere."""
    code = """
import numpy as np
from ipuplan import heap
heap.apply()
a = heap.lazy_zeros((1024, 1 << 20), np.uint8)
a[:, :64] = 7
at, rss, name = a.ctypes.data, None, None
for line in open("/proc/self/smaps"):
    f = line.split()
    if "-" in f[0] and len(f) >= 5:
        lo, hi = (int(v, 16) for v in f[0].split("-"))
        inside = lo <= at < hi
        if inside:
            name = f[5] if len(f) > 5 else "anonymous"
    elif inside and f[0] == "Rss:":
        rss = int(f[1])
print(name, rss, int(a[:, :64].sum()) == 7 * 64 * 1024, int(a[5, 64:].max()))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "anonymous", out
    assert int(out[1]) < 64 * 1024, out  # KiB: 1,024 touched pages of 4 KiB, not 1 GiB
    assert out[2] == "True" and out[3] == "0", out
