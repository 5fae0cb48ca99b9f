"""Without TensorFlow: the backend-neutral paths run on JAX and torch in a process where TensorFlow cannot be
imported, and the TensorFlow-only features stop in one line naming the extra to install.

Each case runs a recipe or a script in a subprocess where `tensorflow`, `tensorflow_text` and `tf_keras` cannot
be imported (`None` in `sys.modules`: `import` raises ModuleNotFoundError and `importlib.util.find_spec` finds
nothing, as in an environment without them, e.g. a venv made from `pip install "torch==2.13.0" -e ".[jax]"`),
and which prints at exit whether TensorFlow was imported. Under KERAS_BACKEND=tensorflow there is nothing to
run without TensorFlow: skipped.
"""

import json
import os
import subprocess
import sys
import tempfile

import keras
import numpy as np
import pytest

from keras_bert_impl.data.pretraining_records import read_examples
from tests.finetuning_files import REPO, run_glue_flags, subprocess_pythonpath, write_sst2_task
from tests.tiny_model_files import TINY, VOCAB

pytestmark = pytest.mark.skipif(keras.backend.backend() == "tensorflow",
                                reason="runs JAX and torch without TensorFlow; the TensorFlow backend needs it")

# Runs the script argv[1] with TensorFlow unimportable, then says whether it was imported.
BLOCKED = r"""
import atexit, runpy, sys

# As in an environment without them: `import tensorflow` raises ModuleNotFoundError, find_spec finds nothing.
for name in ("tensorflow", "tensorflow_text", "tf_keras"):
    sys.modules[name] = None
atexit.register(lambda: print("tensorflow imported:", any(
    module is not None and name.partition(".")[0] in ("tensorflow", "tensorflow_text")
    for name, module in list(sys.modules.items())), flush=True))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_blocked(*argv, code=None, timeout=600):
    """Runs a recipe (`argv`: its path and flags) or `code` with TensorFlow unimportable; returns the process."""
    env = dict(os.environ, PYTHONPATH=subprocess_pythonpath())
    if code is not None:
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(code)
        argv = (f.name,)
    process = subprocess.run([sys.executable, "-c", BLOCKED, *argv], env=env, capture_output=True, text=True,
                             timeout=timeout, cwd=REPO)
    assert "tensorflow imported: False" in process.stdout, process.stdout[-2000:] + process.stderr[-3000:]
    return process


def recipe(name):
    return os.path.join(REPO, "recipes", f"{name}.py")


@pytest.fixture(scope="module")
def glue_run(tmp_path_factory):
    """A tiny run_glue.py training run (train, dev, test predictions) with TensorFlow unimportable."""
    root = tmp_path_factory.mktemp("glue")
    flags = write_sst2_task(str(root / "data"))
    output_dir = str(root / "out")
    process = run_blocked(recipe("run_glue"), *run_glue_flags(flags, output_dir, "--do_predict"))
    return output_dir, process, flags


def test_run_glue_trains_evaluates_predicts_and_logs_without_tensorflow(glue_run, tmp_path):
    output_dir, process, _ = glue_run
    assert process.returncode == 0, process.stderr[-3000:]
    # The same run where TensorFlow may be imported (the dev install) gives the same losses and dev metrics.
    reference_dir = str(tmp_path / "reference")
    flags = write_sst2_task(str(tmp_path / "data"))
    reference = subprocess.run([sys.executable, recipe("run_glue"), *run_glue_flags(flags, reference_dir)],
                               env=dict(os.environ, PYTHONPATH=subprocess_pythonpath()), capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr[-3000:]
    with open(os.path.join(output_dir, "train_log.jsonl")) as f, open(os.path.join(reference_dir, "train_log.jsonl")) as g:
        ours, theirs = [json.loads(line) for line in f], [json.loads(line) for line in g]
    for record, expected in zip(ours, theirs, strict=True):
        assert {k: v for k, v in record.items() if k != "time"} == pytest.approx(
            {k: v for k, v in expected.items() if k != "time"}, rel=1e-5)
    with open(os.path.join(output_dir, "eval_results.json")) as f, open(os.path.join(reference_dir, "eval_results.json")) as g:
        ours, theirs = json.load(f), json.load(g)
    assert ours.pop("accuracy") == pytest.approx(theirs.pop("accuracy"), rel=1e-5) and ours == theirs
    with open(os.path.join(output_dir, "SST-2.tsv")) as f:
        assert len(f.read().splitlines()) == 1 + 5  # header + the 5 test sentences
    with open(os.path.join(output_dir, "model", "config.json")) as f:
        assert json.load(f)["id2label"] == {"0": "negative", "1": "positive"}
    with open(os.path.join(output_dir, "train_log.jsonl")) as f:
        log = [json.loads(line) for line in f]
    assert [record["step"] for record in log] == [10, 20, 30]
    # TensorBoard's own reader reads the curves written without TensorFlow (training/tensorboard_events.py).
    tensorboard_reading = pytest.importorskip("tests.tensorboard_reading")
    scalars = tensorboard_reading.tensorboard_scalars(os.path.join(output_dir, "logs", "train"))
    assert scalars["loss"] == {r["step"]: pytest.approx(r["loss"], rel=1e-6) for r in log}


def test_a_finished_run_started_again_resumes_from_its_checkpoints_without_tensorflow(glue_run):
    output_dir, _, flags = glue_run
    process = run_blocked(recipe("run_glue"), *run_glue_flags(flags, output_dir, "--do_predict"))
    assert process.returncode == 0, process.stderr[-3000:]
    with open(os.path.join(output_dir, "train_log.jsonl")) as f:
        assert [json.loads(line)["step"] for line in f] == [10, 20, 30]  # nothing trained again


def test_the_pipeline_answers_named_labels_without_tensorflow(glue_run):
    output_dir, _, _ = glue_run
    with open(os.path.join(os.path.dirname(output_dir), "data", "test.tsv")) as f:
        texts = [line.rstrip("\n").split("\t")[1] for line in f.readlines()[1:]]
    code = ("import json; from keras_bert_impl import pipeline\n"
            f"classify = pipeline('text-classification', model={os.path.join(output_dir, 'model')!r})\n"
            f"print('ANSWER', json.dumps(classify({texts!r})))")
    process = run_blocked(code=code)
    assert process.returncode == 0, process.stderr[-3000:]
    answers = json.loads(process.stdout.split("ANSWER ", 1)[1].splitlines()[0])
    # The recipe's test predictions (SST-2.tsv: index, 0 or 1), by their names in the model directory.
    with open(os.path.join(output_dir, "SST-2.tsv")) as f:
        predicted = [line.split("\t")[1].strip() for line in f.readlines()[1:]]
    assert [answer["label"] for answer in answers] == [("negative", "positive")[int(p)] for p in predicted]


@pytest.mark.parametrize("fmt, extra", [("savedmodel", "tensorflow"), ("litert", "export")])
def test_the_export_recipe_is_refused_in_one_line_naming_the_extra(glue_run, tmp_path, fmt, extra):
    output_dir, _, _ = glue_run
    export_dir = tmp_path / "export"
    process = run_blocked(recipe("export_savedmodel"), f"--model_dir={os.path.join(output_dir, 'model')}",
                          f"--export_dir={export_dir}", f"--format={fmt}")
    assert process.returncode == 2
    assert process.stderr.count("\n") == 1 and f'pip install "keras_bert_impl[{extra}]"' in process.stderr
    assert process.stderr.startswith("error: ") and "export needs" in process.stderr
    assert not export_dir.exists()


def test_the_onnx_export_recipe_writes_the_file_without_tensorflow(glue_run, tmp_path):
    """The ONNX file is written from the weights under the environment's backend."""
    import onnxruntime

    output_dir, _, _ = glue_run
    export_dir = tmp_path / "export"
    process = run_blocked(recipe("export_savedmodel"), f"--model_dir={os.path.join(output_dir, 'model')}",
                          f"--export_dir={export_dir}", "--format=onnx", "--quantization=dynamic_int8")
    assert process.returncode == 0, process.stderr[-2000:]
    session = onnxruntime.InferenceSession(str(export_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["logits"]


def test_a_tf_distribute_strategy_and_a_tf1_checkpoint_are_refused_in_one_line(tmp_path):
    flags = write_sst2_task(str(tmp_path / "data"))
    output_dir = tmp_path / "out"
    process = run_blocked(recipe("run_glue"), *run_glue_flags(flags, str(output_dir), "--strategy=mirrored"))
    assert process.returncode == 2 and process.stderr.count("\n") == 1, process.stderr[-3000:]
    if keras.backend.backend() == "torch":  # no strategy at all under torch: installing TensorFlow would not help
        assert process.stderr == ("error: --strategy 'mirrored' needs the TensorFlow or JAX backend; the torch backend "
                                  "trains on one device here.\n")
    else:
        assert process.stderr == ('error: --strategy mirrored (a tf.distribute strategy) needs TensorFlow, which is '
                                  'not installed: pip install "keras_bert_impl[tensorflow]"\n')
    assert not output_dir.exists()
    tf1 = tmp_path / "tf1"
    tf1.mkdir()
    (tf1 / "bert_config.json").write_text(json.dumps(dict(TINY)))
    (tf1 / "bert_model.ckpt.index").write_bytes(b"")
    (tf1 / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    process = run_blocked(recipe("run_glue"), *run_glue_flags(flags[:1], str(output_dir), f"--init_checkpoint={tf1}"))
    assert process.returncode == 2 and process.stderr.count("\n") == 1, process.stderr[-3000:]
    assert "the Google TF1 checkpoint" in process.stderr and 'pip install "keras_bert_impl[tensorflow]"' in process.stderr
    assert not output_dir.exists()


def test_run_ner_trains_evaluates_and_predicts_without_tensorflow(tmp_path):
    words = {"PER": ["w0", "w1"], "LOC": ["w2", "w3"], "O": ["w4", "w5", "w6", "w7"]}
    rng = np.random.default_rng(0)

    def sentences(n):
        lines = []
        for _ in range(n):
            for _ in range(int(rng.integers(3, 7))):
                kind = ["PER", "LOC", "O", "O"][int(rng.integers(4))]
                tag = "O" if kind == "O" else f"B-{kind}"
                lines.append(f"{rng.choice(words[kind])} {tag}")
            lines.append("")
        return "\n".join(lines) + "\n"

    for split, n in (("train", 40), ("dev", 10), ("test", 10)):
        (tmp_path / f"{split}.txt").write_text(sentences(n))
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "bert_config.json").write_text(json.dumps(dict(TINY, hidden_dropout_prob=0.0,
                                                                attention_probs_dropout_prob=0.0)))
    output_dir = tmp_path / "out"
    process = run_blocked(
        recipe("run_ner"), f"--data_dir={tmp_path}", f"--vocab_file={tmp_path / 'vocab.txt'}",
        f"--bert_config_file={tmp_path / 'bert_config.json'}", f"--output_dir={output_dir}", "--do_train",
        "--do_eval", "--do_predict", "--max_seq_length=16", "--train_batch_size=8", "--num_train_epochs=3",
        "--learning_rate=5e-3", "--warmup_proportion=0", "--seed=3", "--verbose=0")
    assert process.returncode == 0, process.stderr[-3000:]
    with open(output_dir / "eval_results.json") as f:
        assert json.load(f)["f1"] > 0.5
    assert (output_dir / "test_predictions.txt").is_file()
    assert (output_dir / "model" / "model.safetensors").is_file()


def test_pretraining_files_and_pretraining_without_tensorflow(tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(1)
    corpus.write_text("\n\n".join("\n".join(" ".join(rng.choice(VOCAB[5:], int(rng.integers(3, 8))))
                                            for _ in range(5)) for _ in range(12)) + "\n")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    records = tmp_path / "train.tfrecord"
    process = run_blocked(recipe("create_pretraining_data"), f"--input_file={corpus}", f"--output_file={records}",
                          f"--vocab_file={tmp_path / 'vocab.txt'}", "--max_seq_length=16",
                          "--max_predictions_per_seq=3", "--dupe_factor=2")
    assert process.returncode == 0, process.stderr[-3000:]
    examples = list(read_examples(str(records)))
    assert examples and all(len(example["input_ids"]) == 16 for example in examples)
    (tmp_path / "bert_config.json").write_text(json.dumps(dict(TINY)))
    output_dir = tmp_path / "pretrain"
    process = run_blocked(recipe("pretrain"), f"--input_file={records}", f"--output_dir={output_dir}",
                          f"--bert_config_file={tmp_path / 'bert_config.json'}", "--do_train", "--do_eval",
                          "--train_batch_size=4", "--eval_batch_size=4", "--max_seq_length=16",
                          "--max_predictions_per_seq=3", "--num_train_steps=6", "--num_warmup_steps=1",
                          "--save_checkpoints_steps=3", "--seed=5", "--verbose=0")
    assert process.returncode == 0, process.stderr[-3000:]
    with open(output_dir / "metrics.json") as f:
        metrics = json.load(f)
    assert metrics["global_step"] == 6 and np.isfinite(metrics["eval"]["loss"])
    assert (output_dir / "final" / "model.safetensors").is_file()


def test_models_load_save_quantize_and_adapt_without_tensorflow(model_dir, tmp_path):
    code = f"""
import numpy as np, keras
from keras_bert_impl import BertClassifier, BertTextClassifierPreprocessor, BertTokenizer
from keras_bert_impl.models.backbone import BertBackbone
preprocessor = BertTextClassifierPreprocessor(BertTokenizer.from_pretrained({str(model_dir)!r}), sequence_length=16)
model = BertClassifier.from_pretrained({str(model_dir)!r}, num_classes=2, preprocessor=preprocessor)
model.compile()
model.fit(["hello world", "world w1"], np.array([1, 0]), epochs=1, batch_size=2, verbose=0)
logits = model.predict(["hello world"], verbose=0)
model.save({str(tmp_path / 'model.keras')!r})
reloaded = keras.saving.load_model({str(tmp_path / 'model.keras')!r})
np.testing.assert_allclose(reloaded.predict(["hello world"], verbose=0), logits, atol=1e-5)
model.save_pretrained({str(tmp_path / 'saved')!r})
again = BertClassifier.from_pretrained({str(tmp_path / 'saved')!r})
np.testing.assert_allclose(again.predict(["hello world"], verbose=0), logits, atol=1e-5)
backbone = BertBackbone.from_pretrained({str(model_dir)!r})
backbone.enable_lora(2)
backbone.save_lora_weights({str(tmp_path / 'adapters.lora.h5')!r})
again.quantize("int8")
print("OK", again.predict(["hello world"], verbose=0).shape)
"""
    process = run_blocked(code=code)
    assert process.returncode == 0, process.stderr[-3000:]
    assert "OK (1, 2)" in process.stdout
