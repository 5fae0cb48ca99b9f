"""A recipe's `--help` and a flag's error answer before Keras, TensorFlow, JAX, torch or scipy is imported
(the package imports lazily: keras_bert_impl/__init__.py), with nothing on stderr; `import keras_bert_impl`
imports none of them, gives every export on first use and makes its Keras classes known to Keras whether Keras
is imported before or after it; a recipe that imports TensorFlow keeps its C++ log lines off stderr
(`utils.tensorflow_logs`), and so does a plain script using the package, unless the user set
TF_CPP_MIN_LOG_LEVEL."""

import os
import re
import subprocess
import sys

import pytest

from keras_bert_impl.utils.tensorflow_logs import TENSORFLOW_LOG_LINE
from tests.finetuning_files import subprocess_pythonpath

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
print("IMPORTED", sorted(m for m in {heavy!r} if m in sys.modules), "EXIT", code)
""".format(heavy=HEAVY)


def _run(recipe, *args):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = subprocess_pythonpath()
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


@pytest.mark.backend_independent
def test_the_pretraining_data_recipe_writes_its_records_without_importing_keras_or_a_backend(tmp_path):
    corpus, vocab, output = tmp_path / "corpus.txt", tmp_path / "vocab.txt", tmp_path / "out" / "train.tfrecord"
    corpus.write_text("hello world is a test.\nthis is a test.\n\nhello test world.\na world.\n", encoding="utf-8")
    vocab.write_text("".join(f"{t}\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "is",
                                                "a", "test", "this", "."]), encoding="utf-8")
    result = _run("create_pretraining_data", f"--input_file={corpus}", f"--output_file={output}",
                  f"--vocab_file={vocab}", "--max_seq_length=16", "--dupe_factor=2")
    assert result.stdout.rstrip().endswith("IMPORTED [] EXIT None"), result.stdout[-300:] + result.stderr[-2000:]
    assert re.search(r"Wrote [1-9]\d* total instances from 2 documents", result.stderr) and output.stat().st_size > 0


@pytest.mark.parametrize("keras_first", [False, True], ids=["package_first", "keras_first"])
def test_the_package_imports_nothing_heavy_gives_its_exports_and_registers_them_with_keras(keras_first):
    """Under JAX: `import keras_bert_impl` imports no deep-learning library (and none of its own modules' heavy
    ones); an export loads on first use; Keras' registry knows every Keras class of the package, imported before
    or after the package, each loading as its class, with no TensorFlow imported on the way."""
    code = ("import sys\n"
            + ("import keras\n" if keras_first else "")
            + "import keras_bert_impl as k\n"
              "print(sorted(m for m in ('keras', 'tensorflow', 'torch') if m in sys.modules))\n"
              "print(k.BertConfig.__name__)\n"
              "import keras\n"
              "names = sorted(n for n in keras.saving.get_custom_objects() if n.startswith('keras_bert_impl>'))\n"
              "print(names == sorted('keras_bert_impl>' + n for n in k._KERAS_CLASSES))\n"
              "config = {'module': 'keras_bert_impl.layers.dense', 'class_name': 'BertDense', 'config': {'units': 3},\n"
              "          'registered_name': 'keras_bert_impl>BertDense'}\n"
              "print(type(keras.saving.deserialize_keras_object(config)) is k.BertDense)\n"
              "classifier = k.BertClassifier\n"
              "print(keras.saving.get_registered_object('keras_bert_impl>BertClassifier') is classifier)\n"
              "print(sorted(m for m in ('tensorflow', 'torch') if m in sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": subprocess_pythonpath(), "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.stdout.splitlines() == [str(["keras"] if keras_first else []), "BertConfig", "True", "True", "True",
                                          "[]"], result.stderr[-2000:]


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


def test_the_lazily_imported_package_names_the_class_a_model_directory_holds(tmp_path):
    """A model directory's class is found with only another class imported: loading a token classifier's
    directory as a `BertClassifier` is refused naming the `BertTokenClassifier` it holds (importing one model
    class registers every one: `keras_bert_impl/models/__init__.py`)."""
    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.token_classifier import BertTokenClassifier

    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    BertTokenClassifier(BertBackbone(config), num_classes=3).save_pretrained(str(tmp_path))
    code = ("import sys\n"
            "from keras_bert_impl.models.classifier import BertClassifier\n"
            "print('keras_bert_impl.models.token_classifier' in sys.modules)\n"
            "try:\n"
            f"    BertClassifier.from_pretrained({str(tmp_path)!r}, num_classes=3)\n"
            "except Exception as error:\n"
            "    print(type(error).__name__, error)\n")
    env = {**os.environ, "PYTHONPATH": subprocess_pythonpath(), "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    lines = result.stdout.splitlines()
    assert lines[0] == "True" and lines[1].startswith(f"UserInputError {tmp_path}: holds a BertTokenClassifier "
                                                       "(BertForTokenClassification), not a BertClassifier"), (
        result.stdout + result.stderr[-2000:])


@pytest.mark.tensorflow
def test_plain_library_use_under_tensorflow_prints_none_of_its_cpp_lines_unless_the_user_asks():
    script = "from keras_bert_impl import pipeline\nimport keras\nkeras.ops.ones(3)\nprint('answered')\n"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env.update(PYTHONPATH=subprocess_pythonpath(), KERAS_BACKEND="tensorflow")
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert quiet.returncode == 0 and quiet.stdout == "answered\n", quiet.stderr[-2000:]
    assert quiet.stderr == ""  # no "I0000 ... cpu_feature_guard", no "E0000 ... failed call to cuInit"
    asked = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env=dict(env, TF_CPP_MIN_LOG_LEVEL="0"))  # the user's choice: TensorFlow's lines stay
    assert asked.returncode == 0 and any(TENSORFLOW_LOG_LINE.match(line.encode())
                                         for line in asked.stderr.splitlines()), asked.stderr[-2000:]
