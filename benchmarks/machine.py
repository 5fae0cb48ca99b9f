"""What a benchmark table records of the machine it ran on: the CPU's model name, core count and vector
instruction sets (fast paths, and so the figures, depend on them: AVX2 without AVX-512 on some development
machines, AVX-512 with VNNI on others), as `keras_bert_impl.backends.cpu_paths` reads them to choose the CPU
paths."""

import os

from run_benchmarks import cpu_paths_module  # this script's folder is on sys.path


def describe():
    """{"cpu": model name, "cores": count, "isa": the CPU's kind and recorded flags, e.g. "avx2 (avx2, fma; no
    AVX-512)"}."""
    cpu = cpu_paths_module().describe_cpu()
    return {"cpu": cpu["model"], "cores": os.cpu_count(), "isa": cpu_paths_module().describe_cpu_line(cpu).split(
        "instruction set: ", 1)[1]}
