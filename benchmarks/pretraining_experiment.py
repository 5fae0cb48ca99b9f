"""The "it learns" experiment: pretrain bert_tiny from scratch on CPU and check held-out MLM / NSP.

Steps (each one a command of this repository; `--run` executes them in order, `--summarize` only
does step 5 on an existing run):

1. corpus: `benchmarks/pretraining_corpus.py` (docs of the installed Python packages, ~5 MB,
   5% of the documents held out);
2. vocabulary: `recipes/learn_vocab.py`, an 8,192-piece uncased WordPiece vocabulary learned on the
   training corpus (a smaller softmax than BERT's 30,522, so more examples fit in the CPU budget);
3. data: `recipes/create_pretraining_data.py` (seq 128, 20 predictions, dupe_factor 10 for training,
   4 for the held-out split);
4. training: `recipes/pretrain.py` with bert_tiny's shape over that vocabulary (`bert_config.json`),
   batch 64, a 6,000-step schedule, and `--do_eval` on the held-out split;
5. summary: the most-frequent-token baseline of the held-out masked labels (the accuracy of always
   predicting the most common masked token) and the majority-label NSP baseline, the training curve
   from `train_log.jsonl`, the eval metrics from `metrics.json` -> `docs/pretraining_curve.json`.

    python benchmarks/pretraining_experiment.py --work_dir /tmp/bert_exp --run
    python benchmarks/pretraining_experiment.py --work_dir /tmp/bert_exp --summarize
"""

import argparse
import collections
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB_SIZE = 8192
TRAIN_FLAGS = [
    "--do_train", "--do_eval", "--max_seq_length=128", "--max_predictions_per_seq=20",
    "--train_batch_size=64", "--eval_batch_size=64", "--max_eval_steps=100", "--num_train_steps=6000",
    "--num_warmup_steps=500", "--learning_rate=1e-3", "--save_checkpoints_steps=1000",
    "--iterations_per_loop=200", "--seed=12345", "--verbose=2",
]


def write_config(path):
    """bert_tiny's shape (2 layers, hidden 128, 2 heads) over the learned vocabulary."""
    from keras_bert_impl.config import BertConfig

    config = BertConfig.from_dict({**BertConfig.preset("bert_tiny").to_dict(), "vocab_size": VOCAB_SIZE})
    config.to_json_file(path)


def run_pipeline(work_dir):
    corpus, data = os.path.join(work_dir, "corpus"), os.path.join(work_dir, "data")
    vocab, config = os.path.join(work_dir, "vocab.txt"), os.path.join(work_dir, "bert_config.json")
    os.makedirs(work_dir, exist_ok=True)
    write_config(config)
    py = sys.executable
    commands = [
        [py, "benchmarks/pretraining_corpus.py", f"--output_dir={corpus}", "--max_mb=5"],
        [py, "recipes/learn_vocab.py", f"--input_files={corpus}/train.txt", f"--output_file={vocab}",
         f"--vocab_size={VOCAB_SIZE}", "--do_lower_case"],
        [py, "recipes/create_pretraining_data.py", f"--input_file={corpus}/train.txt",
         "--output_file=" + ",".join(f"{data}/train-{i}.tfrecord" for i in range(4)), f"--vocab_file={vocab}",
         "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20", "--masked_lm_prob=0.15",
         "--random_seed=12345", "--dupe_factor=10", "--shard_size_documents=0"],
        [py, "recipes/create_pretraining_data.py", f"--input_file={corpus}/heldout.txt",
         f"--output_file={data}/heldout.tfrecord", f"--vocab_file={vocab}", "--do_lower_case=True",
         "--max_seq_length=128", "--max_predictions_per_seq=20", "--masked_lm_prob=0.15", "--random_seed=54321",
         "--dupe_factor=4", "--shard_size_documents=0"],
        [py, "recipes/pretrain.py", f"--input_file={data}/train-*.tfrecord",
         f"--eval_input_file={data}/heldout.tfrecord", f"--output_dir={work_dir}/out", f"--bert_config_file={config}",
         *TRAIN_FLAGS],
    ]
    for command in commands:
        print("+", " ".join(command), flush=True)
        subprocess.run(command, cwd=REPO, check=True)


def heldout_baselines(heldout_pattern):
    """(most-frequent-token accuracy, that token's id, majority NSP accuracy, #masked labels, #instances)."""
    from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset

    tokens, nsp = collections.Counter(), collections.Counter()
    for _, y in pretraining_dataset(heldout_pattern, 128, 20, 256, is_training=False).as_numpy_iterator():
        ids, weights = y["masked_lm_ids"].ravel(), y["masked_lm_weights"].ravel()
        tokens.update(ids[weights > 0].tolist())
        nsp.update(y["next_sentence_labels"].ravel().tolist())
    token_id, count = tokens.most_common(1)[0]
    total_masked, total_nsp = sum(tokens.values()), sum(nsp.values())
    return count / total_masked, token_id, max(nsp.values()) / total_nsp, total_masked, total_nsp


def summarize(work_dir, heldout_pattern, output):
    from keras_bert_impl.training.metrics_log import read_metrics_log

    out = os.path.join(work_dir, "out")
    metrics_path = os.path.join(out, "metrics.json")
    if not os.path.isfile(metrics_path):  # a run stopped early: the eval-only run of its last checkpoint
        metrics_path = os.path.join(work_dir, "eval", "metrics.json")
    with open(metrics_path) as f:
        metrics = json.load(f)
    mlm_base, token_id, nsp_base, n_masked, n_instances = heldout_baselines(heldout_pattern)
    curve = [
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "time"}
        for r in read_metrics_log(os.path.join(out, "train_log.jsonl"))
    ]
    summary = {
        "train_flags": TRAIN_FLAGS,
        "heldout": {
            "instances": n_instances,
            "masked_labels": n_masked,
            "most_frequent_token_id": int(token_id),
            "most_frequent_token_accuracy": round(mlm_base, 4),
            "majority_nsp_accuracy": round(nsp_base, 4),
        },
        "final": metrics,
        "curve": curve,
    }
    with open(output, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print(json.dumps({k: summary[k] for k in ("heldout", "final")}, indent=1))
    # Issue 4's bar: held-out MLM accuracy far above the most-frequent-token baseline, NSP >= 0.80.
    heldout = metrics["eval"]
    failures = []
    if heldout["masked_lm_accuracy"] < 2 * mlm_base:
        failures.append(f"masked_lm_accuracy {heldout['masked_lm_accuracy']:.3f} < 2 x baseline {mlm_base:.3f}")
    if heldout["next_sentence_accuracy"] < 0.80:
        failures.append(f"next_sentence_accuracy {heldout['next_sentence_accuracy']:.3f} < 0.80")
    if failures:
        raise SystemExit("It does not learn enough: " + "; ".join(failures))
    print("PASS: held-out masked LM accuracy >= 2x the baseline and next sentence accuracy >= 0.80")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", required=True)
    p.add_argument("--run", action="store_true", help="Run the whole pipeline first.")
    p.add_argument("--summarize", action="store_true")
    p.add_argument("--heldout", default=None, help="Held-out TFRecords; default work_dir/data/heldout.tfrecord.")
    p.add_argument("--output", default=os.path.join(REPO, "docs", "pretraining_curve.json"))
    args = p.parse_args()
    if args.run:
        run_pipeline(args.work_dir)
    if args.run or args.summarize:
        summarize(args.work_dir, args.heldout or os.path.join(args.work_dir, "data", "heldout.tfrecord"), args.output)


if __name__ == "__main__":
    main()
