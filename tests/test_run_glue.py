"""recipes/run_glue.py and recipes/run_swag.py end to end: the real MiniLM checkpoint fine-tuned on the shipped
data/sentiment set reaches >= 90% held-out dev accuracy; a subprocess run writes eval_results.json and the
GLUE submission files (MNLI matched and mismatched); the SWAG recipe trains, evaluates and predicts."""

import csv
import json
import os
import subprocess
import sys

import pytest

from keras_bert_impl import pipeline
from keras_bert_impl.config import BertConfig
from tests.finetuning_files import load_recipe

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTIMENT = os.path.join(REPO, "data", "sentiment")


def _tiny_config(tmp_path):
    """A tiny random BERT over the real uncased vocabulary (fast recipe plumbing tests)."""
    path = os.path.join(tmp_path, "bert_config.json")
    BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=64).to_json_file(path)
    return path


@pytest.mark.large
def test_minilm_fine_tuned_on_the_sentiment_set_generalizes_to_held_out_dev(minilm_path, tmp_path):
    # lr 5e-5 (in the paper's grid): one epoch reached 0.994-1.0 on every backend over several seeds, where
    # 1e-4 gave 0.94-1.0 but 0.82 for one torch seed.
    output_dir = str(tmp_path / "sentiment")
    results = load_recipe("run_glue").main([
        "--task_name=sst2", f"--data_dir={SENTIMENT}", f"--init_checkpoint={minilm_path}", f"--output_dir={output_dir}",
        "--do_train", "--do_eval", "--do_predict", "--max_seq_length=64", "--train_batch_size=32",
        "--eval_batch_size=64", "--predict_batch_size=64", "--learning_rate=5e-5", "--num_train_epochs=1",
        "--verbose=0",
    ])
    print("sentiment dev accuracy:", results["accuracy"])
    assert results["accuracy"] >= 0.90
    stored = json.load(open(os.path.join(output_dir, "eval_results.json")))
    assert stored["accuracy"] == results["accuracy"] and stored["num_dev_examples"] == {"dev": 160}
    rows = list(csv.reader(open(os.path.join(output_dir, "SST-2.tsv")), delimiter="\t"))
    assert rows[0] == ["index", "prediction"] and len(rows) == 101
    assert [int(r[0]) for r in rows[1:]] == list(range(100)) and {r[1] for r in rows[1:]} <= {"0", "1"}
    # The model directory answers through the pipeline with SST-2's label names, as the recipe predicted (in
    # .ci/run's environment without TensorFlow: with none installed).
    test = list(csv.reader(open(os.path.join(SENTIMENT, "test.tsv")), delimiter="\t"))[1:]
    classify = pipeline("text-classification", model=os.path.join(output_dir, "model"))
    answers = classify([sentence for _, sentence in test])
    assert [answer["label"] for answer in answers] == [("negative", "positive")[int(r[1])] for r in rows[1:]]


def _mnli_dir(tmp_path):
    header = "\t".join(["index", "promptID", "pairID", "genre", "a", "b", "c", "d", "sentence1", "sentence2"])
    labels = ["contradiction", "entailment", "neutral"]
    directory = tmp_path / "mnli"
    directory.mkdir()
    for split, n in (("train", 12), ("dev_matched", 5), ("dev_mismatched", 4), ("test_matched", 3),
                     ("test_mismatched", 2)):
        lines = [header + ("" if split.startswith("test") else "\tlabel1\tgold_label")]
        for i in range(n):
            row = [str(i), "1", "1n", "fiction", "(", "(", "(", "(", f"the cat number {i} sleeps .", "a dog runs ."]
            if not split.startswith("test"):
                row += [labels[i % 3], labels[i % 3]]
            lines.append("\t".join(row))
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory)


def test_run_glue_subprocess_writes_eval_results_and_submission_files(tmp_path, minilm_vocab_file):
    output_dir = str(tmp_path / "out")
    argv = [sys.executable, os.path.join(REPO, "recipes", "run_glue.py"), "--task_name=MNLI",
            f"--data_dir={_mnli_dir(tmp_path)}", f"--bert_config_file={_tiny_config(tmp_path)}",
            f"--vocab_file={minilm_vocab_file}", f"--output_dir={output_dir}", "--do_train", "--do_eval",
            "--do_predict", "--max_seq_length=32", "--train_batch_size=4", "--num_train_epochs=1"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "3/3" in proc.stdout  # Keras progress bar: 12 examples / 4 per batch
    results = json.load(open(os.path.join(output_dir, "eval_results.json")))
    assert 0.0 <= results["accuracy"] <= 1.0 and 0.0 <= results["mm_accuracy"] <= 1.0
    assert results["num_dev_examples"] == {"dev_matched": 5, "dev_mismatched": 4} and results["epoch"] == 1
    for name, n in (("MNLI-m.tsv", 3), ("MNLI-mm.tsv", 2)):
        rows = list(csv.reader(open(os.path.join(output_dir, name)), delimiter="\t"))
        assert rows[0] == ["index", "prediction"] and [r[0] for r in rows[1:]] == [str(i) for i in range(n)]
        assert {r[1] for r in rows[1:]} <= {"contradiction", "entailment", "neutral"}
    assert os.path.isfile(os.path.join(output_dir, "model", "model.safetensors"))


def test_run_swag_trains_evaluates_and_predicts(tmp_path, minilm_vocab_file):
    header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3"
    data_dir = tmp_path / "swag"
    data_dir.mkdir()
    for name, n, labelled in (("train.csv", 8, True), ("val.csv", 4, True), ("test.csv", 3, False)):
        lines = [header + (",label" if labelled else "")]
        for i in range(n):
            row = f"v{i},{i},x,A man opens the door {i}.,He,gold,walks in.,flies away.,eats the door.,sings loudly."
            lines.append(row + (f",{i % 4}" if labelled else ""))
        (data_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    output_dir = str(tmp_path / "out")
    results = load_recipe("run_swag").main([
        f"--data_dir={data_dir}", f"--bert_config_file={_tiny_config(tmp_path)}", f"--vocab_file={minilm_vocab_file}",
        f"--output_dir={output_dir}", "--do_train", "--do_eval", "--do_predict", "--max_seq_length=32",
        "--train_batch_size=4", "--num_train_epochs=1", "--nosave_model", "--verbose=0",
    ])
    assert 0.0 <= results["accuracy"] <= 1.0 and results["num_dev_examples"] == 4
    assert json.load(open(os.path.join(output_dir, "eval_results.json")))["accuracy"] == results["accuracy"]
    rows = open(os.path.join(output_dir, "test_predictions.csv")).read().splitlines()
    assert rows[0] == "id,label" and len(rows) == 4 and all(r.split(",")[1] in "0123" for r in rows[1:])
