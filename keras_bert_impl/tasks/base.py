"""The fine-tuning task interface, loading a checkpoint and its tokenizer from the flags, and saving a
complete model directory.

A `FinetuningTask` holds everything one family of fine-tuning runs does differently (GLUE, NER, SQuAD,
SWAG): its files, features, model, loss, dev metric and prediction files. The training loop that every
task shares (seed, optimizer, `fit` with the best dev checkpoint, eval_results.json) is
`keras_bert_impl.runners.finetuning.run_finetuning`.
"""

import dataclasses
import json
import os

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.file_io import write_json


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


def config_overrides(args, **overrides):
    """Backbone config fields replacing the checkpoint's: `--bert_config_file`'s (when given), then `overrides`."""
    stored = BertConfig.from_json_file(args.bert_config_file).to_dict() if args.bert_config_file else {}
    return {**stored, **overrides}


def load_backbone(args, **overrides):
    """The backbone of `--init_checkpoint` (with `--bert_config_file` when given), else a random one."""
    if args.init_checkpoint:
        return BertBackbone.from_pretrained(args.init_checkpoint, **config_overrides(args, **overrides))
    if not args.bert_config_file:
        raise ValueError("Either --init_checkpoint or --bert_config_file is required.")
    config = BertConfig.from_json_file(args.bert_config_file)
    if overrides:
        config = BertConfig.from_dict({**config.to_dict(), **overrides})
    return BertBackbone(config)


def save_model_directory(model, tokenizer, directory, max_seq_length, extra_config=None, **save_kwargs):
    """Writes a complete model directory: the model's `save_pretrained` (config.json, model.safetensors),
    the tokenizer's vocab.txt and tokenizer_config.json (with its do_lower_case), and `max_seq_length`
    plus the `extra_config` entries (e.g. SQuAD's decoding settings) in config.json. `save_kwargs` go to
    the model's `save_pretrained` (e.g. `label_names`)."""
    model.save_pretrained(directory, **save_kwargs)
    tokenizer.save_pretrained(directory)
    config_path = os.path.join(directory, "config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(extra_config or {}, max_seq_length=int(max_seq_length))
    write_json(config_path, config)


def batching_options(args):
    """The padding options of prediction batches (`batching.predict_bucketed`) from the flags."""
    return {"dynamic_padding": args.dynamic_padding, "max_length": args.max_seq_length,
            "pad_to_multiple_of": args.pad_to_multiple_of}


@dataclasses.dataclass
class TrainingSet:
    """The training data of a task, as `run_finetuning` feeds it to `model.fit`.

    Attributes:
        features: dict name -> per-example sequences (`bucketed`), or dict name -> arrays [N, T].
        labels: the labels (per example, or per token), or the label arrays when not `bucketed`.
        num_examples: the units counted by the step schedule (examples, windows or features).
        description: what the run trains on, for the log line.
        bucketed: whether `features` go through the length-bucketed batches (`training_batches`).
        batching_options: more `training_batches` arguments (e.g. label_padding_value).
        fit_kwargs: more `model.fit` arguments (e.g. shuffle=True, which reorders the bucketed batches).
    """

    features: dict
    labels: object
    num_examples: int
    description: str
    bucketed: bool = True
    batching_options: dict = dataclasses.field(default_factory=dict)
    fit_kwargs: dict = dataclasses.field(default_factory=dict)


class FinetuningTask:
    """One family of fine-tuning runs, driven by `run_finetuning(task, args)` in this order:

    `check_flags()`; `setup(tokenizer)` (label lists, dev sets); `build_model()`; with --do_train:
    `training_set()`, `compile_arguments()`, `fit` (with `evaluate` after every epoch and the best
    weights kept when `can_evaluate`), `best_results(metrics)`, `save_model(...)`; `evaluate(model)`
    when `can_evaluate` and there are no results yet; with --do_predict `predict(model, results)`;
    finally `write_results(results)`.

    Attributes:
        name: the task's name in log lines.
        main_metric: the key of `evaluate`'s dict that picks the best epoch.
        args: the recipe's flags.
    """

    name = "task"
    main_metric = "accuracy"

    def __init__(self, args):
        self.args = args
        self.tokenizer = None

    def check_flags(self):
        """Raises ValueError for flag combinations the task cannot run."""
        if not (self.args.do_train or self.args.do_eval or self.args.do_predict):
            raise ValueError("At least one of --do_train, --do_eval or --do_predict must be set.")

    def setup(self, tokenizer):
        """Reads what the model and the evaluation need before training (labels, dev sets)."""
        self.tokenizer = tokenizer

    @property
    def can_evaluate(self):
        """Whether there is a labelled dev set: then every epoch is evaluated and the best one kept."""
        return bool(self.args.do_eval)

    def build_model(self):
        raise NotImplementedError

    def training_set(self):
        """The `TrainingSet` of --do_train."""
        raise NotImplementedError

    def compile_arguments(self):
        """`model.compile` arguments besides the optimizer (loss, metrics); none for models that compute
        their own loss."""
        return {}

    def evaluate(self, model):
        """The dev metrics (the paper's metric first among them), a dict."""
        raise NotImplementedError

    def best_results(self, best_metrics):
        """The results after training, from the best epoch's dev metrics (the model holds its weights)."""
        return dict(best_metrics)

    def save_model(self, model, directory):
        """Writes the fine-tuned model directory (`save_model_directory`)."""
        save_model_directory(model, self.tokenizer, directory, self.args.max_seq_length)

    def predict(self, model, results):
        """Writes the prediction files of --do_predict; returns the results, with any test metrics added."""
        return results

    def write_results(self, results):
        """Writes eval_results.json (when the task has results to write)."""
        if self.args.do_eval:
            write_json(os.path.join(self.args.output_dir, "eval_results.json"), results)
