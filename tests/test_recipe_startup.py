"""A recipe's `--help` and a flag's error answer before Keras, TensorFlow, JAX, torch or scipy is imported
(the recipes import the package lazily: keras_bert_impl/__init__.py), with nothing on stderr; the package
imported lazily still gives every export and registers them once asked to; a recipe that imports TensorFlow
keeps its C++ log lines off stderr (`utils.tensorflow_logs`), and so does a plain script using the package,
unless the user set TF_CPP_MIN_LOG_LEVEL."""

import os
import re
import subprocess
import sys
import time

import pytest

from keras_bert_impl.utils.tensorflow_logs import TENSORFLOW_LOG_LINE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = ["run_glue", "run_ner", "run_squad", "run_swag", "run_sentence_embeddings", "pretrain",
           "create_pretraining_data", "export_savedmodel", "extract_features", "learn_vocab", "ablations"]
HEAVY = ("keras", "tensorflow", "jax", "torch", "scipy")

# Runs a recipe as `python recipes/NAME.py ARGS` does, then prints which heavy libraries were imported.
_RUN_RECIPE = """
import runpy, sys
path, args = sys.argv[1], sys.argv[2:]
sys.argv = [path, *args]
code = None
try:
    runpy.run_path(path, run_name="__main__")
except SystemExit as exit:
    code = exit.code
import os
print("TF_CPP_MIN_LOG_LEVEL set:", "TF_CPP_MIN_LOG_LEVEL" in os.environ)
print("KERAS_BERT_IMPL_LAZY_IMPORT set:", "KERAS_BERT_IMPL_LAZY_IMPORT" in os.environ)
print("IMPORTED", sorted(m for m in {heavy!r} if m in sys.modules), "EXIT", code)
""".format(heavy=HEAVY)


def _run(recipe, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BERT_IMPL_LAZY_IMPORT", "TF_CPP_MIN_LOG_LEVEL")}
    env["PYTHONPATH"] = ROOT
    return subprocess.run([sys.executable, "-c", _RUN_RECIPE, os.path.join(ROOT, "recipes", f"{recipe}.py"), *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("recipe", RECIPES)
def test_help_answers_without_importing_a_deep_learning_library(recipe):
    result = _run(recipe, "--help")
    assert result.stdout.startswith(f"usage: {recipe}.py"), result.stdout[:200] + result.stderr[-2000:]
    assert result.stdout.rstrip().endswith("IMPORTED [] EXIT 0"), result.stdout[-300:]
    assert result.stderr == ""
    # A recipe leaves TF_CPP_MIN_LOG_LEVEL to the user: set before run_main, it turns the filter of TensorFlow's
    # log lines off.
    assert "TF_CPP_MIN_LOG_LEVEL set: False" in result.stdout
    # ... and imports the package lazily for itself only: a process it starts imports it as usual.
    assert "KERAS_BERT_IMPL_LAZY_IMPORT set: False" in result.stdout


@pytest.mark.parametrize("recipe, args, message", [
    ("run_glue", ["--output_dir=out", "--learning_rate=-1"],
     "error: argument --learning_rate: expected a positive number, got '-1' (see --help)\n"),
    ("pretrain", ["--output_dir=out", "--train_batch_sizes=8"],
     "error: unrecognized arguments: --train_batch_sizes=8 (see --help)\n"),
])
def test_a_flag_error_is_one_line_before_keras_is_imported(recipe, args, message):
    result = _run(recipe, *args)
    assert result.stderr == message
    assert result.stdout.rstrip().endswith("IMPORTED [] EXIT 2"), result.stdout[-300:]


def test_the_lazily_imported_package_gives_its_exports_and_registers_them():
    code = ("import sys, keras_bert_impl as k\n"
            "assert 'keras' not in sys.modules\n"
            "print(k.BertConfig.__name__, 'keras' in sys.modules)\n"
            "k.import_exports()\n"
            "import keras\n"
            "print(keras.saving.get_registered_object('keras_bert_impl>BertClassifier') is k.BertClassifier)\n")
    env = {**os.environ, "KERAS_BERT_IMPL_LAZY_IMPORT": "1", "PYTHONPATH": ROOT}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.stdout.split() == ["BertConfig", "False", "True"], result.stderr[-2000:]


def test_help_answers_within_a_second():
    """The bound on `--help`: a second (best of five, so that a busy machine's slow starts do not decide)."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        result = _run("run_glue", "--help")
        times.append(time.perf_counter() - start)
        assert result.returncode == 0
    assert min(times) < 1.0, times


@pytest.mark.tensorflow
def test_a_recipe_that_imports_tensorflow_prints_none_of_its_cpp_log_lines_and_warns_in_one_line(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 50, encoding="utf-8")
    result = _run("learn_vocab", f"--input_files={corpus}", f"--output_file={tmp_path / 'vocab.txt'}",
                  "--vocab_size=60", "--quiet")
    assert result.stdout.rstrip().endswith("EXIT 0"), result.stdout[-500:] + result.stderr[-2000:]
    assert "tensorflow" in result.stdout  # the check below saw TensorFlow's import
    noise = [line for line in result.stderr.splitlines() if TENSORFLOW_LOG_LINE.match(line.encode())
             or re.match(r"[EWI]0000 |WARNING: All log messages before absl", line)]
    assert noise == [], result.stderr[-2000:]
    # A Python warning is one line, without its source line (`runners.cli.one_line_warnings`).
    assert result.stderr == ("warning: The corpus yields only 36 tokens at min_frequency=2; the vocabulary is "
                             "smaller than vocab_size=60.\n")
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8").split("\n")[:5] == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.mark.tensorflow
def test_plain_library_use_under_tensorflow_prints_none_of_its_cpp_lines_unless_the_user_asks():
    script = "from keras_bert_impl import pipeline\nimport keras\nkeras.ops.ones(3)\nprint('answered')\n"
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BERT_IMPL_LAZY_IMPORT", "TF_CPP_MIN_LOG_LEVEL")}
    env.update(PYTHONPATH=ROOT, KERAS_BACKEND="tensorflow")
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert quiet.returncode == 0 and quiet.stdout == "answered\n", quiet.stderr[-2000:]
    assert quiet.stderr == ""  # no "I0000 ... cpu_feature_guard", no "E0000 ... failed call to cuInit"
    asked = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env=dict(env, TF_CPP_MIN_LOG_LEVEL="0"))  # the user's choice: TensorFlow's lines stay
    assert asked.returncode == 0 and any(TENSORFLOW_LOG_LINE.match(line.encode())
                                         for line in asked.stderr.splitlines()), asked.stderr[-2000:]
