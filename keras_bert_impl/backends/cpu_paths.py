"""Which path each operation with more than one CPU implementation takes: chosen by the CPU's instruction
set, read once from the operating system, or forced by the user.

| backend | operation | paths (the first: what the layers called before the CPU was read) | AVX-512 | AVX2 |
| --- | --- | --- | --- | --- |
| torch | `dense` (float32, its gradient recorded: training) | `onednn` (`torch_ops.onednn_dense`), `blas` (`torch_ops.blas_dense`: MKL's sgemm) | onednn | onednn |
| torch | `dense_inference` (float32, no gradient recorded) | `onednn`, `blas` | onednn | blas |
| torch | `attention` without dropout | `fused` (SDPA), `explicit` (`torch.matmul`, softmax, `torch.matmul`) | fused | fused |
| tensorflow | `dense` (float32) | `transposed_gradient` (`tf_ops.dense_with_transposed_gradient`), `matmul` | transposed_gradient | transposed_gradient |
| tensorflow | `attention` without dropout | `explicit`, `fused` (`keras.ops.dot_product_attention`) | explicit | explicit |
| jax | `attention` without dropout | `explicit` (the probabilities out of the next dot's fusion), `fused` | explicit | explicit |

The choice is read from the instruction set rather than measured at first use: the flags are a fact of the
CPU, the same in every process and run, so a model computes the same products every time it is loaded; a
measurement at first use would depend on what else the machine runs then (the development machines are
shared: their timings of one product move by 2x from minute to minute), and would cost seconds at start-up.
What each path measured on each kind of CPU, and the command, is in docs/performance.md ("Paths chosen by
the CPU") and `benchmarks/results/cpu_paths/results.md`. A CPU of neither kind (another architecture, or
flags that cannot be read) takes the first path of each row, which the AVX-512 machines measured.

A user who knows better forces paths for a process with the environment variable
`KERAS_BERT_IMPL_CPU_PATHS` ("dense=blas,attention=explicit": the paths of the backend in use), or for a
block of code with `forced(dense="blas")`, which wins over the variable. The paths apply on the CPU only,
where each one applies (`keras_bert_impl.backends` says where: float32 products on an x86-64 CPU for torch's
oneDNN, for example); a GPU keeps its own.

Standard library only: `benchmarks/run_benchmarks.py` loads this file without importing Keras, to record
the CPU beside its figures (`describe_cpu`).
"""

import contextlib
import contextvars
import functools
import os
import platform

ENVIRONMENT_VARIABLE = "KERAS_BERT_IMPL_CPU_PATHS"

# backend: {operation: its paths}; the first path of each is the one taken before the CPU was read.
PATHS = {
    "torch": {"dense": ("onednn", "blas"), "dense_inference": ("onednn", "blas"),
              "attention": ("fused", "explicit")},
    "tensorflow": {"dense": ("transposed_gradient", "matmul"), "attention": ("explicit", "fused")},
    "jax": {"attention": ("explicit", "fused")},
}

# kind of CPU: {backend: {operation: path}}, where it differs from the first path (benchmarks/results/cpu_paths).
CHOSEN = {
    "avx512": {},
    "avx2": {"torch": {"dense_inference": "blas"}},
    "other": {},
}

# The instruction-set extensions recorded beside a benchmark's figures (those a matmul kernel may use).
RECORDED_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
                  "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
                  "asimd", "sve", "sve2", "bf16", "i8mm")

_FORCED = contextvars.ContextVar("forced_cpu_paths", default={})


def cpu_kind(flags):
    """The kind of CPU whose paths `CHOSEN` lists, from its instruction-set flags (lower case, as in
    /proc/cpuinfo): "avx512" with AVX-512 Foundation, "avx2" with AVX2 and without it, else "other".

    Examples:

    >>> cpu_kind({"avx2", "fma", "avx512f"}), cpu_kind({"avx2", "fma"}), cpu_kind({"asimd"})
    ('avx512', 'avx2', 'other')
    """
    if "avx512f" in flags:
        return "avx512"
    return "avx2" if "avx2" in flags else "other"


@functools.lru_cache(maxsize=None)
def describe_cpu():
    """This machine's CPU, read once (`read_cpu`)."""
    return read_cpu()


def read_cpu(cpuinfo="/proc/cpuinfo"):
    """{"model": the CPU's name, "kind": `cpu_kind`, "flags": the `RECORDED_FLAGS` it has}, from the first
    core's block of `cpuinfo` (Linux; the flags are "flags" on x86, "Features" on ARM). Without the file the
    flags are unknown: an empty list, kind "other"."""
    fields = {}
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the end of the first core's block
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    flags = set((fields.get("flags") or fields.get("features") or "").split())
    model = fields.get("model name") or platform.processor() or platform.machine()
    return {"model": model, "kind": cpu_kind(flags), "flags": [f for f in RECORDED_FLAGS if f in flags]}


def describe_cpu_line(cpu=None):
    """`describe_cpu()` (or `cpu`) as one line for a results table.

    Examples:

    >>> describe_cpu_line({"model": "AMD EPYC", "kind": "avx2", "flags": ["avx2", "fma"]})
    'AMD EPYC; instruction set: avx2 (avx2, fma; no AVX-512)'
    """
    cpu = cpu or describe_cpu()
    no_avx512 = "" if cpu["kind"] == "avx512" or "avx512f" in cpu["flags"] else "; no AVX-512"
    flags = ", ".join(cpu["flags"]) or "flags unknown"
    return f"{cpu['model']}; instruction set: {cpu['kind']} ({flags}{no_avx512})"


def default_path(backend, operation, kind=None):
    """The path `CHOSEN` gives `operation` on `backend` for CPUs of `kind` (default: this machine's).

    Examples:

    >>> default_path("torch", "dense_inference", "avx512"), default_path("torch", "dense_inference", "avx2")
    ('onednn', 'blas')
    """
    kind = kind or describe_cpu()["kind"]
    return CHOSEN[kind].get(backend, {}).get(operation, PATHS[backend][operation][0])


def path(backend, operation):
    """The path `operation` takes on `backend`'s CPU: forced by `forced`, else by `KERAS_BERT_IMPL_CPU_PATHS`,
    else `default_path`. Raises ValueError for a forced path that is not one of the backend's."""
    forced = _FORCED.get()
    if operation in forced:
        return _checked(backend, operation, forced[operation], "forced")
    from_environment = _parse(os.environ.get(ENVIRONMENT_VARIABLE, ""))
    if operation in from_environment:
        return _checked(backend, operation, from_environment[operation], ENVIRONMENT_VARIABLE)
    return default_path(backend, operation)


def chosen_paths(backend):
    """{operation: path} for every operation of `backend` with more than one path (`path` of each).

    Examples:

    >>> with forced(attention="fused"):
    ...     chosen_paths("jax")
    {'attention': 'fused'}
    """
    return {operation: path(backend, operation) for operation in PATHS[backend]}


@contextlib.contextmanager
def forced(**paths):
    """Within it, each `operation=path` given takes that path (on a backend that has it; another backend
    raises ValueError when it computes the operation). Nested blocks add to the outer one's paths.

    Examples:

    >>> with forced(dense="blas"):
    ...     path("torch", "dense")
    'blas'
    """
    for operation, name in paths.items():
        known = {p for ops in PATHS.values() for p in ops.get(operation, ())}
        if name not in known:
            raise ValueError(f"forced({operation}={name!r}): expected an operation of {_operations()} and one "
                             f"of its paths {sorted(known) or ''}.")
    token = _FORCED.set({**_FORCED.get(), **paths})
    try:
        yield
    finally:
        _FORCED.reset(token)


def _operations():
    return sorted({operation for ops in PATHS.values() for operation in ops})


def _checked(backend, operation, name, source):
    paths = PATHS[backend].get(operation, ())
    if name not in paths:
        raise ValueError(f"{source}: {operation}={name}: the {backend} backend's {operation} paths are "
                         f"{', '.join(paths) or 'none (it has one path)'}.")
    return name


@functools.lru_cache(maxsize=8)
def _parse(text):
    """"dense=blas,attention=fused" as {"dense": "blas", "attention": "fused"}; ValueError naming the
    variable and the entry for anything else."""
    paths = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        operation, equals, name = (part.strip() for part in entry.partition("="))
        if not equals or operation not in _operations() or not name:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}={text!r}: entry {entry!r}: expected operation=path with an "
                             f"operation of {_operations()}, e.g. dense=blas,attention=fused.")
        paths[operation] = name
    return paths
