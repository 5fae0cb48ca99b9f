"""A recipe's `--help` and a flag's error answer before Keras, TensorFlow, JAX, torch or scipy is imported
(the recipes import the package lazily: keras_bert_impl/__init__.py), with nothing on stderr; a recipe that
imports TensorFlow keeps TensorFlow's C++ log lines off stderr; the package imported lazily still gives every
export and registers them once asked to."""

import os
import subprocess
import sys

import pytest

from keras_bert_impl.utils.tensorflow_logs import TENSORFLOW_LOG_LINE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = ["run_glue", "run_ner", "run_squad", "run_swag", "pretrain", "create_pretraining_data",
           "export_savedmodel", "extract_features", "learn_vocab", "ablations"]
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


def test_a_recipe_that_imports_tensorflow_keeps_its_log_lines_off_stderr(tmp_path):
    vocab, corpus = tmp_path / "vocab.txt", tmp_path / "corpus.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"北京上海天气很好今日"]) + "\n",
                     encoding="utf-8")
    corpus.write_text("北京天气很好。\n上海今日天气很好。\n\n上海天气很好。\n北京今日很好。\n", encoding="utf-8")
    result = _run("create_pretraining_data", f"--input_file={corpus}", f"--vocab_file={vocab}",
                  f"--output_file={tmp_path / 'out.tfrecord'}", "--max_seq_length=16", "--dupe_factor=1")
    last = result.stdout.splitlines()[-1]
    assert "'tensorflow'" in last and last.endswith("EXIT None"), \
        result.stdout[-300:] + result.stderr[-2000:]
    assert "Wrote 3 total instances" in result.stderr  # its own report (on stderr, as the original's)
    logs = [line for line in result.stderr.splitlines() if TENSORFLOW_LOG_LINE.match(line.encode())]
    assert not logs, result.stderr


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
