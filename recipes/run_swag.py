"""Fine-tunes BERT on SWAG (multiple choice; Devlin et al. §4.4), for Keras 3 on any backend.

    python recipes/run_swag.py --data_dir=DIR --init_checkpoint=CKPT --output_dir=/tmp/swag \\
        --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=16 \\
        --learning_rate=2e-5 --num_train_epochs=3

`--data_dir` holds SWAG's train.csv, val.csv (and test.csv). Each choice is packed as
`[CLS] sent1 [SEP] sent2 ending_i [SEP]`; the model scores the four choices and a softmax across them
is trained with cross-entropy. Writes to `--output_dir`: eval_results.json (dev accuracy of the best
epoch), dev_metrics_per_epoch.json and best.weights.h5 (BestCheckpoint by dev accuracy), model/ (a
Hugging Face BertForMultipleChoice directory) and test_predictions.csv (`id,label`).
"""

import math
import os
import shutil
import sys

import keras
import numpy as np

from keras_bert_impl.data import batching
from keras_bert_impl.data import swag_data
from keras_bert_impl.models.classifier import load_dense_head
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
from keras_bert_impl.metrics.glue_metrics import accuracy
from keras_bert_impl.models.multiple_choice import BertMultipleChoice

SPLIT_FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on SWAG.")
    p.add_bool_flag("dynamic_padding", True, "Pad each batch to its longest example, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=int, default=8, help="Round dynamic lengths up to a multiple.")
    p.add_bool_flag("save_model", True, "Write the fine-tuned model to output_dir/model (Hugging Face layout).")
    p.add_argument("--verbose", type=int, default=1, help="Keras fit verbosity (1 = progress bar).")
    return p


def batching_options(args):
    return {"dynamic_padding": args.dynamic_padding, "max_length": args.max_seq_length,
            "pad_to_multiple_of": args.pad_to_multiple_of}


def load_split(tokenizer, args, split):
    """(features, labels or None, examples) of "train", "dev" or "test"."""
    examples = swag_data.read_swag_file(os.path.join(args.data_dir, SPLIT_FILES[split]), labelled=split != "test")
    features = swag_data.encode_swag_examples(tokenizer, examples, args.max_seq_length)
    labels = None if split == "test" else swag_data.swag_labels(examples)
    return features, labels, examples


def run(args):
    """Trains / evaluates / predicts as the flags say; returns the dev metrics (or {}).

    Builds and trains under `--strategy` (in its scope) and `--mixed_precision`.
    """
    return run_distributed(train_evaluate_predict, args)


def train_evaluate_predict(args):
    """The recipe's work, inside the strategy scope of `run`."""
    if not (args.do_train or args.do_eval or args.do_predict):
        raise ValueError("At least one of --do_train, --do_eval or --do_predict must be set.")
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    tokenizer = load_tokenizer(args)
    backbone = load_backbone(args)
    model = BertMultipleChoice(backbone, num_choices=swag_data.NUM_CHOICES)
    load_dense_head(model.output_dense, backbone.head_weights, source=str(args.init_checkpoint))
    dev = load_split(tokenizer, args, "dev") if args.do_eval else None

    def evaluate(m):
        logits = batching.predict_bucketed(m, dev[0], batch_size=args.eval_batch_size, **batching_options(args))
        return {"accuracy": accuracy(logits, dev[1])}

    results = {}
    if args.do_train:
        features, labels, examples = load_split(tokenizer, args, "train")
        total_steps = num_train_steps(len(examples), args.train_batch_size, args.num_train_epochs)
        model.compile(
            optimizer=create_finetuning_optimizer(args, total_steps),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            steps_per_execution=args.steps_per_execution,
        )
        dataset = training_batches(features, labels, args)
        callbacks = [BestCheckpoint(evaluate, "accuracy", args.output_dir)] if args.do_eval else []
        model.fit(dataset, epochs=math.ceil(args.num_train_epochs), callbacks=callbacks, verbose=args.verbose,
                  shuffle=False)  # the batches are shuffled already
        if args.do_eval:
            results = dict(callbacks[0].best_metrics)
        if args.save_model:
            model_dir = os.path.join(args.output_dir, "model")
            model.save_pretrained(model_dir)
            shutil.copy(tokenizer.vocab_file, os.path.join(model_dir, "vocab.txt"))

    if args.do_eval:
        results = results or evaluate(model)
        results["num_dev_examples"] = len(dev[2])
        write_json(os.path.join(args.output_dir, "eval_results.json"), results)
        print(f"swag dev accuracy={results['accuracy']:.4f}")

    if args.do_predict:
        features, _, examples = load_split(tokenizer, args, "test")
        logits = batching.predict_bucketed(model, features, batch_size=args.predict_batch_size, **batching_options(args))
        path = os.path.join(args.output_dir, "test_predictions.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("id,label\n")
            f.writelines(f"{e.swag_id},{int(p)}\n" for e, p in zip(examples, np.argmax(logits, axis=-1)))
        print(f"wrote {len(examples)} test predictions to {path}")
    return results


def main(argv=None):
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
