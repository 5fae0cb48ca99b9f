"""What every pipeline shares: its model (a model directory, a model name or a built task model), its
preprocessor and tokenizer, its options, batches with a progress bar, and its inputs one or many.

A pipeline's options take the recipes' flag names (`max_seq_length`, `predict_batch_size`, `vocab_file`,
`do_lower_case`, and each task's own, e.g. run_squad.py's `doc_stride`), and transformers' pipeline
arguments where no recipe has one (`top_k`, `aggregation_strategy`, `batch_size` for `predict_batch_size`).
Given to `pipeline(...)` they are the pipeline's settings; given to a call, they replace them for that call.
A setting not given is the one the model directory was fine-tuned with (config.json's `max_seq_length`,
SQuAD's decoding settings, `long_input`; those of the model's preprocessor for a built model), else the
recipe's default.

What a pipeline refuses (`UserInputError`, one line): an input that is not a text, naming its index (an
empty one too, where a text is what the model scores: `check_texts`); `max_seq_length` outside 3 to the
model's position table (`max_position_embeddings`), `predict_batch_size` below 1, a `top_k` below 1
(`check_settings`). An input longer than the pipeline reads is cut with one warning per pipeline, the first
time, naming what reads all of it (`warn_cut`).
"""

import collections.abc
import os
import sys
import warnings

import keras
import numpy as np

from keras_bert_impl.checkpoints import task_registry
from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.data import batching
from keras_bert_impl.pipelines.runtime_model import RuntimeModel, export_file
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError, describe

# The options of every pipeline, and their defaults (None: the model's, see the module docstring).
COMMON_OPTIONS = {"max_seq_length": None, "predict_batch_size": 8, "vocab_file": None, "do_lower_case": None,
                  "verbose": None}
# transformers' names of options whose recipe flag has another name.
ALIASES = {"batch_size": "predict_batch_size"}
# `verbose` None shows a progress bar for inputs of more than this many batches.
PROGRESS_MIN_BATCHES = 8


class Pipeline:
    """Base class of the pipelines: a task model and its preprocessor, called on raw inputs.

    A subclass names its `task` (the pipeline name model classes register with,
    `checkpoints.task_registry`: the classes it runs are those registered with it), the `default_model` class
    it builds from a directory of another class (e.g. a plain BERT checkpoint, whose head then starts random,
    with a warning), its own `options` with their defaults, and implements `run(inputs, settings)`: a list of
    inputs -> a list of answers, decoded by the model's own methods. `__call__` takes one input or a list of
    them and answers in kind.

    Args:
        model: a model directory or name (`checkpoints.model_directory.ModelDirectory`), or a built model
            of one of `model_classes()`.
        tokenizer: a `BertTokenizer` or a directory holding vocab.txt; default: the model's (its
            preprocessor's, or the model directory's), else `vocab_file` / `do_lower_case`.
        **options: the pipeline's settings (`COMMON_OPTIONS`, the subclass's `options`).
    """

    task = None
    default_model = None
    options = {}
    # Whether top_k=None (every label or choice) is an answer of this pipeline.
    top_k_may_be_all = False

    def __init__(self, model, tokenizer=None, **options):
        options = self.check_options(options)
        self.checkpoint = None
        if isinstance(model, keras.Model):
            if _pipeline_of(model) != self.task:
                raise UserInputError(f"pipeline({self.task!r}) runs a {self.class_names()}, got a {type(model).__name__}.")
            self.model = model
        else:
            self.checkpoint = ModelDirectory(os.fspath(model))
            self.model = self.load_model(self.checkpoint)
        self.tokenizer = self.load_tokenizer(tokenizer, options)
        self.settings = self.check_settings({**COMMON_OPTIONS, **self.options, **self.saved_settings(), **options})
        self.warned_cut = False

    # ------------------------------------------------------------------------------ the model
    @classmethod
    def model_classes(cls):
        """The model classes registered with this pipeline's name (`task_registry.pipeline_classes`)."""
        return task_registry.pipeline_classes(cls.task)

    @classmethod
    def class_names(cls):
        """The registered classes' names, for messages ("BertTokenClassifier or BertFeatureBasedTagger")."""
        classes = [cls.default_model, *[c for c in cls.model_classes() if c is not cls.default_model]]
        return " or ".join(c.__name__ for c in classes if c is not None)

    def model_class(self, checkpoint):
        """The class to load `checkpoint` as: the registered class it holds when this pipeline runs it, else
        `default_model`."""
        stored = task_registry.stored_entry(checkpoint) if checkpoint.architecture else None
        return stored.model_class if stored is not None and stored.pipeline == self.task else self.default_model

    def check_checkpoint(self, checkpoint):
        """Refuses (`UserInputError`) a directory holding a fine-tuned model of another task; a plain BERT
        (or pretraining) checkpoint is taken, its head starting random."""
        stored = task_registry.stored_entry(checkpoint) if checkpoint.architecture else None
        if stored is not None and stored.pipeline != self.task and not stored.backbone_source:
            raise UserInputError(f"{checkpoint.path} holds a {checkpoint.architecture} ({stored.name}); "
                                 f"pipeline({self.task!r}) runs a {self.class_names()}.")

    def load_model(self, checkpoint):
        """The task model of a `ModelDirectory` (`from_pretrained`), or of an ONNX or LiteRT export folder its
        runtime's stand-in (`RuntimeModel`)."""
        self.check_checkpoint(checkpoint)
        if export_file(checkpoint.directory) is not None:
            return RuntimeModel(checkpoint, self.model_class(checkpoint))
        return self.model_class(checkpoint).from_pretrained(checkpoint)

    def load_tokenizer(self, tokenizer, options):
        """The tokenizer: `tokenizer`, `vocab_file` (with `do_lower_case`), the model's preprocessor's, or the
        model directory's."""
        casing = {} if options.get("do_lower_case") is None else {"do_lower_case": options["do_lower_case"]}
        if isinstance(tokenizer, BertTokenizer):
            return tokenizer
        if tokenizer is not None:
            return BertTokenizer.from_pretrained(os.fspath(tokenizer), **casing)
        if options.get("vocab_file"):
            return BertTokenizer(options["vocab_file"], **casing)
        preprocessor = getattr(self.model, "preprocessor", None)
        if preprocessor is not None and not casing:
            return preprocessor.tokenizer
        if self.checkpoint is not None and self.checkpoint.has_vocabulary:
            return BertTokenizer.from_pretrained(self.checkpoint.directory, **casing)
        raise UserInputError(f"pipeline({self.task!r}): no tokenizer; the model has no vocabulary: pass tokenizer= "
                             "(a BertTokenizer or a directory holding vocab.txt) or vocab_file=.")

    def saved_settings(self):
        """The settings the model was fine-tuned with: its preprocessor's sequence length (from_pretrained
        takes config.json's `max_seq_length`), else config.json's, else the preprocessor class's default (SQuAD's
        384); at most the model's position table."""
        preprocessor = getattr(self.model, "preprocessor", None)
        if preprocessor is not None:
            return {"max_seq_length": min(preprocessor.sequence_length, self.position_table()),
                    **preprocessor.task_config()}
        stored = self.checkpoint.max_seq_length if self.checkpoint is not None else None
        preprocessor_class = getattr(self.model, "preprocessor_class", None)
        length = stored or getattr(preprocessor_class, "default_sequence_length", 128)
        return {"max_seq_length": min(length, self.position_table())}

    def preprocessor(self, settings, **task_settings):
        """The model's preprocessor class on the pipeline's tokenizer and `settings`' sequence length."""
        return self.model.preprocessor_class(self.tokenizer, sequence_length=int(settings["max_seq_length"]),
                                             **task_settings)

    def label_names(self, settings, num_classes):
        """`label_names` given, else the model directory's `id2label`, else transformers' `LABEL_i`."""
        names = settings.get("label_names") or (self.checkpoint.label_names if self.checkpoint is not None else None)
        names = list(names) if names else [f"LABEL_{i}" for i in range(num_classes)]
        if len(names) != num_classes:
            raise UserInputError(f"pipeline({self.task!r}): {len(names)} label names for a model of {num_classes} "
                                 "outputs.")
        return names

    # ------------------------------------------------------------------------------ options
    def check_options(self, options):
        """`options` with transformers' aliases renamed; an option this pipeline does not take is an error."""
        renamed = {ALIASES.get(name, name): value for name, value in options.items()}
        known = {**COMMON_OPTIONS, **self.options}
        unknown = sorted(set(renamed) - set(known))
        if unknown:
            raise UserInputError(f"pipeline({self.task!r}) takes no option {', '.join(unknown)}; its options are "
                                 f"{', '.join(sorted(known))} (and {', '.join(ALIASES)}).")
        return renamed

    def call_settings(self, options):
        """The settings of one call: the pipeline's, replaced by the call's `options`, checked."""
        return self.check_settings({**self.settings, **self.check_options(options)})

    def position_table(self):
        """The model's longest input: its backbone's `max_position_embeddings`."""
        return getattr(self.model, "backbone", self.model).config.max_position_embeddings

    def check_settings(self, settings):
        """`settings`, refused (`UserInputError`, naming the option and its valid range) when `max_seq_length`
        is not an integer from 3 ([CLS], a token, [SEP]) to the position table, `predict_batch_size` not a
        positive integer, or `top_k` not a positive integer (or None, where it means every label)."""
        table = self.position_table()
        checks = [("max_seq_length", 3, table, f"from 3 to {table} (the model's max_position_embeddings)"),
                  ("predict_batch_size", 1, None, "of at least 1")]
        for name, low, high, expected in checks:
            value = settings[name]
            if not _is_int(value) or value < low or high is not None and value > high:
                raise UserInputError(f"pipeline({self.task!r}): {name} must be an integer {expected}, got "
                                     f"{describe(value)}.")
        top_k = settings.get("top_k", 1)
        default = top_k is self.options.get("top_k")  # text-classification's "not given"
        if not (default or top_k is None and self.top_k_may_be_all or _is_int(top_k) and top_k >= 1):
            every = " or None (every label)" if self.top_k_may_be_all else ""
            raise UserInputError(f"pipeline({self.task!r}): top_k must be an integer of at least 1{every}, got "
                                 f"{describe(top_k)}.")
        return settings

    def check_texts(self, texts, what="input", allow_empty=True):
        """Refuses (`UserInputError`) an element of `texts` that is not a str, or an empty or blank one unless
        `allow_empty`, naming its index (`what` {index})."""
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise UserInputError(f"pipeline({self.task!r}): {what} {index} is {describe(text)}; expected a str.")
            if not allow_empty and not text.strip():
                raise UserInputError(f"pipeline({self.task!r}): {what} {index} is empty; expected a text.")
        return texts

    def warn_cut(self, cut, limit, remedy):
        """Warns once per pipeline, the first time an input is cut: `cut` None (nothing was) or `(what, tokens)`,
        e.g. ("input 3", 3012); `limit` what cuts it, e.g. "max_seq_length=64"; `remedy` what reads all of it."""
        if cut is None or self.warned_cut:
            return
        self.warned_cut = True
        what, tokens = cut
        warnings.warn(f"pipeline({self.task!r}): {what} has {tokens} tokens, more than {limit} holds: it is cut "
                      f"({remedy}); said once per pipeline.", stacklevel=_callers_level())

    def first_cut(self, texts, pairs, lengths, max_length, names=None):
        """`("input i", tokens)` of the first text (with its pair) that packing to `max_length` cut
        (`packing.cut_rows`; `lengths`: the packed length of each), or None; None once `warn_cut` warned.
        `names[i]`, if given, names text i instead of "input i"."""
        if self.warned_cut:
            return None
        found = next(packing.cut_rows(self.tokenizer, texts, pairs, lengths, max_length), None)
        if found is None:
            return None
        return (f"input {found[0]}" if names is None else names[found[0]]), found[1]

    # ------------------------------------------------------------------------------ running
    def predict(self, features, settings, **options):
        """The model's outputs for every row of `features` (unpadded rows: the recipes' batches, sorted by
        length and padded per batch, `data.batching.predict_bucketed`), with a progress bar when `verbose`
        is 1, or None and there are more than `PROGRESS_MIN_BATCHES` batches."""
        batch_size = int(settings["predict_batch_size"])
        rows = len(next(iter(features.values())))
        verbose = settings["verbose"]
        progress = bool(verbose) if verbose is not None else -(-rows // batch_size) > PROGRESS_MIN_BATCHES
        return batching.predict_bucketed(self.model, features, batch_size=batch_size, progress=progress, **options)

    def run(self, inputs, settings):
        """A list of inputs -> a list of answers."""
        raise NotImplementedError

    def __call__(self, inputs, **options):
        """The answer of one input, or the list of answers of a list of inputs."""
        settings = self.call_settings(options)
        single = self.is_single(inputs) or not isinstance(inputs, collections.abc.Iterable)
        inputs = [inputs] if single else list(inputs)
        answers = self.run(self.check_inputs(inputs), settings) if inputs else []
        return answers[0] if single else answers

    def is_single(self, inputs):
        """Whether `inputs` is one input (a str) rather than a list of them."""
        return isinstance(inputs, str)

    def check_inputs(self, inputs):
        """The inputs of `__call__`, checked: texts (`check_texts`; empty ones allowed)."""
        return self.check_texts(inputs)

    def __repr__(self):
        source = self.checkpoint.path if self.checkpoint is not None else type(self.model).__name__
        return f"{type(self).__name__}(task={self.task!r}, model={source!r})"


def _pipeline_of(model):
    """The pipeline name the model's class is registered with (None: an unregistered class)."""
    try:
        return task_registry.entry_of(model).pipeline
    except TypeError:
        return None


def _callers_level():
    """The `stacklevel` (for `warnings.warn` called by the caller of this function) of the first frame outside
    this package: the user's line that called the pipeline."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
