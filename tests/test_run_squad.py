"""End to end: recipes/run_squad.py fine-tunes the real MiniLM checkpoint on data/qa (SQuAD v2.0 format)
and answers held-out questions whose answers are spans never seen in training; a tiny run writes every
output file. Both run the recipe in a subprocess, on every backend (it inherits KERAS_BACKEND)."""

import json
import os
import subprocess
import sys

import keras
import pytest

from keras_bert_impl.config import BertConfig
from tests.finetuning_files import REPO, run_recipe_with_backend_defaults, subprocess_env

RECIPE = os.path.join(REPO, "recipes", "run_squad.py")
TRAIN_FILE = os.path.join(REPO, "data", "qa", "train.json")
DEV_FILE = os.path.join(REPO, "data", "qa", "dev.json")

# Fine-tuning settings of the end-to-end test (short sequences: every data/qa feature fits in 128): one
# epoch of batches of 8 at 1e-4, the suite's budget. One epoch this short is chaotic: float-level
# variants of the same computation (the order of the attention's products; the last block run whole or as
# two parts, each with its own dropout draw) give HasAns F1 74.0, 81.3 and 86.7 on TensorFlow 2.21; JAX
# (lengths rounded to 32, below) 81.6 and torch 85.4 (Keras 3.15). One answerable dev question is 1.3 F1. A model
# that learned nothing scores near 0; the bars below are 65, under the lowest of these runs. Two epochs at
# 5e-5 (the paper's grid: `--num_train_epochs=2 --learning_rate=5e-5`) give HasAns F1 97.3 on TensorFlow.
E2E_FLAGS = ["--max_seq_length=128", "--doc_stride=64", "--train_batch_size=8", "--learning_rate=1e-4",
             "--num_train_epochs=1", "--predict_batch_size=64"]
# JAX compiles the train and predict steps once per batch length: lengths rounded to 32 instead of 8 give 3
# lengths instead of about 9 (162 s instead of 186 s, the same HasAns F1 81.6). TensorFlow gains nothing
# from it (163 s either way) and torch only pays for the padding.
if keras.backend.backend() == "jax":
    E2E_FLAGS.append("--pad_to_multiple_of=32")


@pytest.mark.large
def test_fine_tuning_minilm_answers_held_out_questions(minilm_path, tmp_path):
    output_dir = str(tmp_path / "out")
    run_recipe_with_backend_defaults("run_squad", [
        f"--train_file={TRAIN_FILE}", f"--predict_file={DEV_FILE}", "--version_2_with_negative",
        f"--init_checkpoint={minilm_path}", f"--output_dir={output_dir}", "--do_train", "--do_predict",
        "--nosave_model", "--verbose=2", *E2E_FLAGS,
    ])
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        results = json.load(f)
    print({k: round(v, 2) if isinstance(v, float) else v for k, v in sorted(results.items())})
    # The dev answers (new people, towns, numbers, jobs, pets) never occur in train.json (test_squad_data).
    assert results["HasAns_total"] >= 50 and results["NoAns_total"] >= 20
    assert results["HasAns_f1"] >= 65.0, results
    assert results["best_f1"] >= 65.0, results
    # No-answer questions: with the best threshold found by the official search, most are answered "".
    with open(os.path.join(output_dir, "null_odds.json")) as f:
        null_odds = json.load(f)
    with open(DEV_FILE) as f:
        dev = json.load(f)
    impossible = [qa["id"] for p in dev["data"][0]["paragraphs"] for qa in p["qas"] if qa["is_impossible"]]
    no_answer_accuracy = sum(null_odds[q] > results["best_f1_thresh"] for q in impossible) / len(impossible)
    print(f"NoAns accuracy at best_f1_thresh={results['best_f1_thresh']:.3f}: {no_answer_accuracy:.3f}")
    assert no_answer_accuracy >= 0.7
    with open(os.path.join(output_dir, "dev_metrics_per_epoch.json")) as f:
        assert len(json.load(f)) == 1


def test_recipe_subprocess_writes_every_output_file(minilm_vocab_file, tmp_path):
    """A tiny random model, 8 training questions, windows of 48 tokens (several per question)."""
    with open(TRAIN_FILE) as f:
        train = json.load(f)
    with open(DEV_FILE) as f:
        dev = json.load(f)
    train["data"][0]["paragraphs"] = train["data"][0]["paragraphs"][:2]
    dev["data"][0]["paragraphs"] = dev["data"][0]["paragraphs"][:2]
    (tmp_path / "train.json").write_text(json.dumps(train))
    (tmp_path / "dev.json").write_text(json.dumps(dev))
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    config.to_json_file(tmp_path / "bert_config.json")
    output_dir = tmp_path / "out"
    command = [
        sys.executable, RECIPE, f"--train_file={tmp_path / 'train.json'}", f"--predict_file={tmp_path / 'dev.json'}",
        "--version_2_with_negative", f"--bert_config_file={tmp_path / 'bert_config.json'}",
        f"--vocab_file={minilm_vocab_file}", "--do_lower_case", f"--output_dir={output_dir}", "--do_train",
        "--do_predict", "--max_seq_length=48", "--doc_stride=16", "--max_query_length=16", "--train_batch_size=8",
        "--num_train_epochs=1", "--learning_rate=1e-3", "--verbose_logging",
    ]
    done = subprocess.run(command, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "num_misaligned_answers=0" in done.stdout
    names = set(os.listdir(output_dir))
    assert {"predictions.json", "nbest_predictions.json", "null_odds.json", "eval_results.json",
            "dev_metrics_per_epoch.json", "best.weights.h5", "train_data_stats.json", "model"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    qids = {qa["id"] for p in dev["data"][0]["paragraphs"] for qa in p["qas"]}
    with open(output_dir / "predictions.json") as f:
        predictions = json.load(f)
    with open(output_dir / "nbest_predictions.json") as f:
        nbest = json.load(f)
    with open(output_dir / "null_odds.json") as f:
        null_odds = json.load(f)
    assert set(predictions) == set(nbest) == set(null_odds) == qids
    assert all(isinstance(v, str) for v in predictions.values())
    assert all(1 <= len(v) <= 20 and "" in [e["text"] for e in v] for v in nbest.values())
    with open(output_dir / "eval_results.json") as f:
        results = json.load(f)
    assert {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact", "NoAns_f1",
            "NoAns_total", "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"} <= set(results)
    assert results["total"] == len(qids)
    with open(output_dir / "train_data_stats.json") as f:
        stats = json.load(f)
    assert stats["num_examples"] == 8 and stats["num_features"] > 8  # several windows per question
    assert os.path.isfile(output_dir / "model" / "model.safetensors")
    with open(output_dir / "model" / "tokenizer_config.json") as f:
        assert json.load(f)["do_lower_case"] is True  # --do_lower_case
    with open(output_dir / "model" / "config.json") as f:
        assert json.load(f)["max_seq_length"] == 48
    with open(output_dir / "model" / "vocab.txt") as f, open(minilm_vocab_file) as reference:
        assert f.read().splitlines() == reference.read().splitlines()
