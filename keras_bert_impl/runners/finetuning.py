"""What every fine-tuning recipe shares: the original run_*.py flags, loading the checkpoint and its
tokenizer, BERT's optimizer schedule, and keeping the best checkpoint by a dev metric.

The task recipes (`recipes/run_glue.py`, `run_ner.py`, `run_squad.py`, `run_swag.py`) stay short by
calling these.
"""

import math
import os

import keras

from keras_bert_impl.data import batching
from keras_bert_impl.training import distribute
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.runners.flags import FlagParser
from keras_bert_impl.training.optimization import create_optimizer
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
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


def load_tokenizer(args):
    """The tokenizer of `--vocab_file`, else of the `--init_checkpoint` directory."""
    kwargs = {} if args.do_lower_case is None else {"do_lower_case": args.do_lower_case}
    if args.vocab_file:
        return BertTokenizer(args.vocab_file, **kwargs)
    directory = args.init_checkpoint
    if directory and not os.path.isdir(directory):
        directory = os.path.dirname(directory)  # a Google checkpoint prefix
    if not directory or not os.path.isfile(os.path.join(directory, "vocab.txt")):
        raise ValueError("--vocab_file is required when --init_checkpoint is not a directory holding vocab.txt.")
    return BertTokenizer.from_pretrained(directory, **kwargs)


def load_backbone(args, **config_overrides):
    """The backbone of `--init_checkpoint` (with `--bert_config_file` when given), else a random one."""
    if args.init_checkpoint:
        if args.bert_config_file:
            stored = BertConfig.from_json_file(args.bert_config_file).to_dict()
            config_overrides = {**stored, **config_overrides}
        return BertBackbone.from_pretrained(args.init_checkpoint, **config_overrides)
    if not args.bert_config_file:
        raise ValueError("Either --init_checkpoint or --bert_config_file is required.")
    config = BertConfig.from_json_file(args.bert_config_file)
    if config_overrides:
        config = BertConfig.from_dict({**config.to_dict(), **config_overrides})
    return BertBackbone(config)


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

    >>> callback = BestCheckpoint(lambda model: {"accuracy": 0.5}, "accuracy", "/tmp/run")  # doctest: +SKIP
    >>> model.fit(x, y, epochs=3, callbacks=[callback])  # doctest: +SKIP
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
