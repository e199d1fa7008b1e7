"""rl/rollout_speed.py's allocator setting: freed memory is reused, not page-faulted in again (the other wrappers are
tested through `cooper rl` runs in test_train.py)."""

import platform
import subprocess
import sys

import pytest

PROBE = """
import resource, sys, torch
if sys.argv[1] == "keep":
    from cooper_rl.rl.rollout_speed import keep_freed_memory
    assert keep_freed_memory()
faults = []
for _ in range(6):  # a 64 MB tensor, written and freed, as a forward's activations are
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    torch.ones(16 << 20)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sum(faults[1:]))
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_keep_freed_memory_reuses_large_blocks():
    kept, default = _faults("keep"), _faults("default")
    # 5 reuses of a 16,384-page block: glibc's default maps it anew every time (81,925 faults measured; fewer where
    # huge pages are always on); kept, the heap's pages are reused (16,384 measured: one block placed anew once)
    assert kept <= 2 * 16384, kept
    assert default >= kept
