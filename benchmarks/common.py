"""Shared helpers of the benchmark scripts: machine/version record, medians, atomic JSON output."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def machine() -> dict:
    """Where and with what a benchmark ran: CPU, cores, memory, versions, date."""
    import torch
    import transformers

    info = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "transformers": transformers.__version__,
    }
    try:
        import trl

        info["trl"] = trl.__version__
    except ImportError:
        pass
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                info["mem_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    try:  # which vector units the CPU has: they decide whether bf16 is native (fast) or emulated (slow)
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
        info["cpu_vector_flags"] = sorted(f for f in flags if f.startswith(("avx512", "amx", "avx2")))
    except (OSError, StopIteration):
        pass
    from cooper_rl.models import fast_bf16

    info["bf16_native"] = fast_bf16()
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def pct(xs: list[float], q: float) -> float:
    """q-th percentile (0-100) by nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def median(xs: list[float]) -> float:
    """Median."""
    return statistics.median(xs)


def write_result(name: str, result: dict) -> Path:
    """Write results/NAME.json atomically (with the machine record) and return its path."""
    from cooper_rl.io import atomic_write_json

    path = atomic_write_json(RESULTS / f"{name}.json", {"machine": machine(), **result})
    print(f"wrote {path}")
    return path
