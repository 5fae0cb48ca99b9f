"""The fine-tuning driver: `run_finetuning(task, args)` runs any `keras_bert_impl.tasks` task (seed,
tokenizer, model, BERT's optimizer schedule, `fit` keeping the best checkpoint by the task's dev metric,
the model directory, eval_results.json, predictions) under `--strategy` and `--mixed_precision`, with
the original run_*.py flags.

The task recipes (`recipes/run_glue.py`, `run_ner.py`, `run_squad.py`, `run_swag.py`) are their flags
and one call of `run_finetuning`.
"""

import math
import os

import keras

from keras_bert_impl.data import batching
from keras_bert_impl.runners.flags import FlagParser
from keras_bert_impl.tasks.base import load_backbone, load_tokenizer  # noqa: F401 (part of this module's API)
from keras_bert_impl.training import distribute
from keras_bert_impl.training.optimization import create_optimizer
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.file_io import write_json


def finetuning_flag_parser(description, max_seq_length=128):
    """A `FlagParser` holding the flags common to google-research/bert's run_classifier.py,
    run_squad.py and friends, with their defaults."""
    p = FlagParser(description=description)
    p.add_argument("--data_dir", default=None, help="Directory of the task's data files.")
    p.add_argument(
        "--init_checkpoint",
        default=None,
        help="Checkpoint to start from: a Hugging Face directory, a Google checkpoint directory or prefix, "
        "or a directory written by save_pretrained. Without it the model starts from random weights.",
    )
    p.add_argument("--bert_config_file", default=None, help="bert_config.json; default: the checkpoint's own.")
    p.add_argument("--vocab_file", default=None, help="vocab.txt; default: the checkpoint directory's vocab.txt.")
    p.add_bool_flag("do_lower_case", None, "Lower-case the input (uncased models). Default: the checkpoint's.")
    p.add_argument("--output_dir", required=True, help="Where checkpoints, metrics and predictions go.")
    p.add_argument("--max_seq_length", type=int, default=max_seq_length, help="Sequence length after WordPiece.")
    p.add_bool_flag("do_train", False, "Fine-tune on the training set.")
    p.add_bool_flag("do_eval", False, "Evaluate on the dev set.")
    p.add_bool_flag("do_predict", False, "Predict on the test set.")
    p.add_argument("--train_batch_size", type=int, default=32)
    p.add_argument("--eval_batch_size", type=int, default=8)
    p.add_argument("--predict_batch_size", type=int, default=8)
    p.add_argument("--learning_rate", type=float, default=5e-5, help="Peak learning rate of AdamW.")
    p.add_argument("--num_train_epochs", type=float, default=3.0)
    p.add_argument("--warmup_proportion", type=float, default=0.1, help="Fraction of steps of linear warmup.")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--steps_per_execution", type=int, default=1, help="Train steps per compiled call.")
    distribute.add_distribution_flags(p)
    return p


def add_data_file_flags(p):
    """`--train_file`, `--validation_file`, `--test_file`: a split in a datasets-ecosystem file (JSON lines,
    JSON, CSV/TSV, parquet; `data.dataset_files`) instead of the original file in `--data_dir`."""
    for split, flag in (("training", "train_file"), ("dev", "validation_file"), ("test", "test_file")):
        p.add_argument(f"--{flag}", default=None,
                       help=f"The {split} set as a JSON lines, JSON, CSV, TSV or parquet file (as Hugging Face "
                       f"datasets exports it), instead of --data_dir's original file.")
    return p


def add_task_flags(p, unit="example"):
    """The flags every task recipe adds: dynamic padding, saving the model directory, fit's verbosity.
    `unit` names what a batch holds in the help texts (example, window, feature)."""
    p.add_bool_flag("dynamic_padding", True, f"Pad each batch to its longest {unit}, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=int, default=8, help="Round dynamic lengths up to a multiple.")
    p.add_bool_flag("save_model", True, "Write the fine-tuned model with its vocab.txt and tokenizer_config.json "
                    "to output_dir/model (Hugging Face layout).")
    p.add_argument("--verbose", type=int, default=1, help="Keras fit verbosity (1 = progress bar).")
    return p


def setup_distribution(args):
    """Applies `--mixed_precision`, resolves `--strategy`/`--tpu`, and returns the `distribute.Distribution`
    whose `scope()` the recipe builds and compiles its model in.

    `--train_batch_size` stays the global batch. On a TPU every batch needs the same shape, so
    `args.static_shapes` becomes True (training batches padded to `--max_seq_length`, whole batches
    only) and `--dynamic_padding` is turned off.
    """
    distribute.set_mixed_precision(args.mixed_precision)
    distribution = distribute.get_distribution(args.strategy, tpu=args.tpu)
    args.static_shapes = distribution.is_tpu
    if distribution.is_tpu and getattr(args, "dynamic_padding", False):
        print("TPU: every batch is padded to --max_seq_length (static shapes); --dynamic_padding is off.")
        args.dynamic_padding = False
    if distribution.num_replicas > 1 and args.do_train:
        per_replica = distribution.per_replica_batch_size(args.train_batch_size)
        print(f"{distribution.name}: {distribution.num_replicas} replicas x {per_replica} = global batch "
              f"{args.train_batch_size}")
    return distribution


def run_distributed(work, args):
    """`work(args)` under `--mixed_precision`, inside the `--strategy` scope (`setup_distribution`), so that
    the model, optimizer and metric variables it builds live on the replicas. Returns what `work` returns."""
    distribution = setup_distribution(args)
    with distribution.scope():
        return work(args)


def num_train_steps(num_examples, train_batch_size, num_train_epochs):
    """Optimizer steps of a fine-tuning run: every batch of every epoch (the last partial batch counts)."""
    return max(1, math.ceil(num_examples / train_batch_size) * math.ceil(num_train_epochs))


def create_finetuning_optimizer(args, total_steps):
    """BERT's AdamW with warmup over `warmup_proportion` of the steps, then linear decay to zero."""
    return create_optimizer(args.learning_rate, total_steps, int(total_steps * args.warmup_proportion))


def training_batches(features, labels, args, **options):
    """The shuffled, length-bucketed training batches of a recipe, reshuffled every epoch, for `model.fit`.

    A `tf.data.Dataset` on the TensorFlow backend (static whole batches when `args.static_shapes`, i.e. on
    a TPU), a Keras `PyDataset` on JAX and PyTorch (see `batching.BucketedBatches` for why). Pass
    `shuffle=False` to `model.fit`: the batches are already shuffled within length buckets.

    Args:
        features, labels: as in `batching.bucketed_batches`.
        args: the recipe's flags (train_batch_size, seed, dynamic_padding, max_seq_length,
            pad_to_multiple_of, static_shapes).
        **options: more `bucketed_batches` arguments (e.g. label_padding_value).
    """
    options = {"dynamic_padding": getattr(args, "dynamic_padding", True), "max_length": args.max_seq_length,
               "pad_to_multiple_of": getattr(args, "pad_to_multiple_of", 8), **options}
    static_shapes = getattr(args, "static_shapes", False)
    if keras.backend.backend() == "tensorflow":
        from keras_bert_impl.data import tf_batching

        return tf_batching.bucketed_dataset(features, labels, batch_size=args.train_batch_size, shuffle=True,
                                            seed=args.seed, static_shapes=static_shapes, **options)
    if static_shapes:
        options.update(dynamic_padding=False, drop_remainder=True)
    return batching.BucketedBatches(features, labels, args.train_batch_size, seed=args.seed, **options)


class BestCheckpoint(keras.callbacks.Callback):
    """Evaluates on the dev set after every epoch and keeps the weights with the best dev metric.

    `evaluate_fn(model) -> dict` computes the task's metrics (the paper's metric, on the real dev
    examples, e.g. SQuAD F1 after post-processing); `metric` names the key to maximize. The best weights
    are written to `output_dir/best.weights.h5` (atomically), every epoch's metrics to
    `output_dir/dev_metrics_per_epoch.json`, and at the end of training the model holds the best weights.

    Args:
        evaluate_fn: callable taking the model and returning a dict of dev metrics.
        metric: the key of that dict to maximize.
        output_dir: where the best weights and the per-epoch metrics go.

    Examples:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> dev_scores = iter([0.5, 0.8, 0.6])
    >>> callback = BestCheckpoint(lambda model: {"accuracy": next(dev_scores)}, "accuracy", tempfile.mkdtemp())
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0, callbacks=[callback])
    <BLANKLINE>
    epoch 1: dev accuracy=0.5000
    <BLANKLINE>
    epoch 2: dev accuracy=0.8000
    <BLANKLINE>
    epoch 3: dev accuracy=0.6000
    >>> callback.best_metrics
    {'accuracy': 0.8, 'epoch': 2}
    """

    def __init__(self, evaluate_fn, metric, output_dir):
        super().__init__()
        self.evaluate_fn = evaluate_fn
        self.metric = metric
        self.output_dir = output_dir
        self.best_value = -math.inf
        self.best_metrics = None
        self.history = []
        self.path = os.path.join(output_dir, "best.weights.h5")

    def on_epoch_end(self, epoch, logs=None):
        metrics = self.evaluate_fn(self.model)
        if self.metric not in metrics:
            raise KeyError(f"evaluate_fn returned {sorted(metrics)}, without the metric {self.metric!r}.")
        self.history.append({"epoch": epoch + 1, **metrics})
        write_json(os.path.join(self.output_dir, "dev_metrics_per_epoch.json"), self.history)
        print(f"\nepoch {epoch + 1}: dev " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items())
                                                  if isinstance(v, (int, float))))
        if metrics[self.metric] > self.best_value:
            self.best_value = metrics[self.metric]
            self.best_metrics = dict(metrics, epoch=epoch + 1)
            with file_io.atomic_path(self.path) as tmp:
                self.model.save_weights(tmp + ".weights.h5")  # Keras insists on the suffix
                os.replace(tmp + ".weights.h5", tmp)

    def on_train_end(self, logs=None):
        if os.path.isfile(self.path):
            self.model.load_weights(self.path)


# ------------------------------------------------------------------------------------------- the driver
def run_finetuning(task, args):
    """Trains / evaluates / predicts `task` (a `keras_bert_impl.tasks.base.FinetuningTask`) as the flags
    say, under `--strategy` (in its scope) and `--mixed_precision`; returns the results written to
    eval_results.json (or {})."""
    return run_distributed(lambda flags: finetune(task, flags), args)


def finetune(task, args):
    """The work of `run_finetuning`, inside the strategy scope.

    Seeds, loads the tokenizer, lets the task read its labels and dev sets and build its model; with
    --do_train compiles BERT's AdamW schedule with the task's loss and fits, evaluating every epoch and
    keeping the best weights (`BestCheckpoint`, by `task.main_metric`) when the task can evaluate, then
    saves output_dir/model; evaluates (when not done by training); with --do_predict writes the task's
    prediction files; and writes eval_results.json.
    """
    task.args = args
    task.check_flags()
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)
    tokenizer = load_tokenizer(args)
    task.setup(tokenizer)
    model = task.build_model()
    results = {}
    if args.do_train:
        train = task.training_set()
        epochs = math.ceil(args.num_train_epochs)
        total_steps = num_train_steps(train.num_examples, args.train_batch_size, args.num_train_epochs)
        model.compile(optimizer=create_finetuning_optimizer(args, total_steps),
                      steps_per_execution=args.steps_per_execution, **task.compile_arguments())
        if train.bucketed:  # shuffle=False: the batches are shuffled (within length buckets) already
            data = training_batches(train.features, train.labels, args, **train.batching_options)
            fit_kwargs = {"shuffle": False, **train.fit_kwargs}
        else:
            data = train.features
            fit_kwargs = {"y": train.labels, "batch_size": args.train_batch_size, "shuffle": True, **train.fit_kwargs}
        print(f"{task.name}: {train.description}, {epochs} epochs, {total_steps} steps")
        best = BestCheckpoint(task.evaluate, task.main_metric, args.output_dir) if task.can_evaluate else None
        model.fit(data, epochs=epochs, callbacks=[] if best is None else [best], verbose=args.verbose, **fit_kwargs)
        if best is not None:
            results = task.best_results(best.best_metrics)
        if args.save_model:
            task.save_model(model, os.path.join(args.output_dir, "model"))
    if task.can_evaluate and not results:
        results = task.evaluate(model)
    if args.do_predict:
        results = task.predict(model, results)
    task.write_results(results)
    return results
