"""What a benchmark table records of the machine it ran on: the CPU's model name, core count and vector
instruction sets (fast paths, and so the figures, depend on them: AVX2 without AVX-512 on some development
machines, AVX-512 with VNNI on others)."""

import os
import platform


def _cpuinfo_field(name):
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":")[0].strip() == name:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_isa():
    """The CPU's vector instruction sets from /proc/cpuinfo's flags (Linux), e.g. "avx2 fma" or
    "avx2 fma avx512f ... avx512_vnni"; the machine's architecture elsewhere."""
    flags = (_cpuinfo_field("flags") or "").split()
    wanted = [f for f in flags if f in ("avx2", "fma", "avx_vnni", "amx_int8", "amx_bf16") or f.startswith("avx512")]
    return " ".join(wanted) if flags else platform.machine()


def describe():
    """{"cpu": model name, "cores": count, "isa": `cpu_isa()`}."""
    return {"cpu": _cpuinfo_field("model name") or platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "isa": cpu_isa()}
