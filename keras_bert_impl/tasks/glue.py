"""Sentence(-pair) classification and regression with a `BertClassifier` over the pooled [CLS] output: the
GLUE tasks (google-research/bert run_classifier.py) and your own data with any labels.

A GLUE task (`--task_name`) reads `--data_dir`'s train.tsv / dev*.tsv / test*.tsv (`data/glue_data.py`), or
a split from `--train_file` / `--validation_file` / `--test_file` (JSON lines, JSON, CSV, TSV, parquet;
columns named by `--text_column`, `--text_pair_column`, `--label_column`), which replaces --data_dir's
file(s) of that split (MNLI: a --validation_file is its one dev set, a --test_file its one test set). It
evaluates the task's GLUE metrics (MNLI's mismatched ones prefixed "mm_") and writes the GLUE server's
submission files; the model directory names the labels readably (SST-2's "negative" and "positive", not
"0" and "1": `glue_data.model_label_names`).

Without `--task_name`, the files are your own data (`data/text_classification_data.py`): labels of any
count (at least two), integers or strings, read from --train_file (float labels, or `--regression`: a
regression), kept as names in the model
directory's config.json `id2label` (without --do_train: the checkpoint's labels); it evaluates accuracy
(a regression: Pearson and Spearman correlations) and writes test_predictions.tsv (`index`, `prediction`:
the label name, or the score).

`--long_input`: a text longer than `--max_seq_length` is cut as the original (`truncate`, the default), or
classified by its windows of `--max_seq_length` tokens (`tokenizers.packing.pack_windows`) whose logits
are pooled by their `mean` or `max` (`text_classification_data.pool_window_logits`); training then trains
on every window with its text's label. The mode is saved in config.json (`long_input`), where the pipeline
reads it. Every split the run needs is read in `setup`, before the model is built.
A GLUE task's training file of `data.streaming.STREAMING_MIN_BYTES` or more (or any, with
`--stream_train_data`; a TSV or JSON-lines file, `--long_input=truncate`) is checked in `setup` in one pass
and streamed during training, in bounded memory.
"""

import logging
import os
from typing import NamedTuple, Optional

import numpy as np

from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.data import batching, glue_data, streaming, text_classification_data
from keras_bert_impl.metrics.glue_metrics import glue_task_metrics
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.tasks.base import FinetuningTask, TrainingSet, batching_options, warn_cut_examples
from keras_bert_impl.data.class_scores import class_predictions, window_logits
from keras_bert_impl.tasks.configs import GlueConfig
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.training.metrics_log import metrics_text
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import write_json

logger = logging.getLogger(__name__)

# split kind -> the flag of its file.
_FILE_FLAGS = {"train": "train_file", "dev": "validation_file", "test": "test_file"}
# The prediction file of your own data's test split.
TEST_PREDICTIONS_FILE = "test_predictions.tsv"
# The examples of a streamed training file whose texts the [UNK] report reads (it reads the others whole).
UNKNOWN_TOKENS_SAMPLE = 100_000


class ClassificationSplit(NamedTuple):
    """One split as the task reads it: the model's features (one row per window with `--long_input` mean or
    max), the labels (None for a test split), the examples, and the example of each row (None: one row each)."""

    features: dict
    labels: Optional[np.ndarray]
    examples: list
    example_index: Optional[np.ndarray] = None


class GlueTask(FinetuningTask):
    """A GLUE task (`GlueConfig.task_name`: cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte or wnli), or your own
    classification data (no task name; see the module docstring)."""

    config_class = GlueConfig

    def __init__(self, config):
        super().__init__(config)
        self.task = glue_data.canonical_task(config.task_name) if config.task_name else None
        self.name = self.task or "classification"
        self.main_metric = glue_data.GLUE_MAIN_METRIC[self.task] if self.task else "accuracy"
        # Label names in class-id order; None: a regression (STS-B). Your own data's: set by `setup`.
        self.label_names = glue_data.get_labels(self.task) if self.task else None
        self.train_set = None
        self.dev_sets = {}
        self.test_sets = {}

    @property
    def regression(self):
        return self.label_names is None

    def check_flags(self):
        super().check_flags()
        if self.task is not None:
            if self.config.regression:
                raise UserInputError(f"--regression is for your own data (no --task_name); {self.task} is "
                                     f"{'a regression' if self.regression else 'a classification'} already.")
            return
        for wanted, kind in ((self.config.do_train, "train"), (self.config.do_eval, "dev"),
                             (self.config.do_predict, "test")):
            flag = _FILE_FLAGS[kind]
            if wanted and not getattr(self.config, flag):
                raise UserInputError(f"--{flag} is required for the {kind} data of your own data (no --task_name); "
                                     "a GLUE task (--task_name) reads --data_dir.")

    def split_files(self, kind):
        """[(split, file)] of "train", "dev" or "test": the file flag's file as the first split of that kind,
        else --data_dir's `{split}.tsv` for every split of that kind (file None)."""
        if self.task is None:
            return [(kind, getattr(self.config, _FILE_FLAGS[kind]))]
        splits = {"train": ["train"], "dev": glue_data.dev_splits(self.task),
                  "test": glue_data.test_splits(self.task)}[kind]
        path = getattr(self.config, _FILE_FLAGS[kind])
        if path:
            return [(splits[0], path)]
        if not self.config.data_dir:
            raise UserInputError(f"--data_dir or --{_FILE_FLAGS[kind]} is required for the {kind} data.")
        return [(split, None) for split in splits]

    def read_examples(self, split, path):
        """The `InputExample`s of one split: from its file flag's file, else from --data_dir."""
        config = self.config
        if self.task is None:
            return text_classification_data.read_labelled_records(path, split, config.text_column,
                                                                  config.text_pair_column, config.label_column)
        if path is None:
            return glue_data.read_glue_examples(self.task, config.data_dir, split)
        return glue_data.read_glue_records(self.task, path, split, config.text_column, config.text_pair_column,
                                           config.label_column)

    def encode(self, examples, split="train"):
        """(features, example_index) of examples: packed as the original (`glue_data.encode_examples`; the
        examples it cuts said in one warning), or with --long_input mean / max every text's windows
        (`packing.pack_windows`) and the text of each."""
        if self.config.long_input == "truncate":
            features = glue_data.encode_examples(self.tokenizer, examples, self.config.max_seq_length)
            warn_cut_examples(self.tokenizer, [e.text_a for e in examples], [e.text_b for e in examples],
                              features, self.config.max_seq_length, f"the {split} set",
                              "--long_input=mean or max reads all of a text" if not any(e.text_b for e in examples)
                              else "a larger --max_seq_length reads more")
            return features, None
        paired = next((e for e in examples if e.text_b), None)
        if paired is not None:
            raise UserInputError(f"--long_input={self.config.long_input} classifies the windows of single texts; "
                                 f"{paired.guid} is a text pair (use --long_input=truncate).")
        return packing.pack_windows(self.tokenizer, [e.text_a for e in examples], self.config.max_seq_length)

    def load_split(self, split, examples):
        """The `ClassificationSplit` of one split's examples."""
        features, example_index = self.encode(examples, split)
        labels = None
        if not split.startswith("test"):
            labels = (glue_data.label_ids(self.task, examples) if self.task else
                      text_classification_data.label_ids(examples, self.label_names))
        return ClassificationSplit(features, labels, examples, example_index)

    def own_label_names(self, examples):
        """Your own data's label set (`text_classification_data.label_set`): without --do_train the checkpoint's
        (a regression: None; its `id2label`), else, or when it has none, that of the training (else dev)
        examples; `examples`: {"train" / "dev" / "test": examples}."""
        if not self.config.do_train and self.config.init_checkpoint:
            checkpoint = ModelDirectory(self.config.init_checkpoint)
            if checkpoint.problem_type == "regression":
                return None
            if checkpoint.label_names:
                return checkpoint.label_names
        labelled = examples.get("train") or examples.get("dev")
        if labelled is None:
            raise UserInputError(f"--init_checkpoint={self.config.init_checkpoint}: no label names (config.json's "
                                 "id2label); --train_file or --validation_file gives them.")
        return text_classification_data.label_set(labelled, self.config.regression)

    def streamed_split(self, split, path=None):
        """The training split streamed from its file (`streaming.StreamedExamples`, checked line by line in one
        pass) when --stream_train_data says so (unset: a file of at least `streaming.STREAMING_MIN_BYTES`); None
        to read it in memory. A TSV or JSON-lines file streams (`glue_data.glue_line_parser`); CSV, JSON and
        parquet files are read in memory, and so is your own data (its label set is read from the whole file)
        and --long_input mean / max."""
        stream = self.config.stream_train_data
        if stream is False:
            return None
        config = self.config
        if self.task is None or config.long_input != "truncate":
            if stream:
                raise UserInputError("--stream_train_data streams a GLUE task's training file (--task_name) with "
                                     "--long_input=truncate; your own data and windows are read in memory.")
            return None
        file = path or glue_data.glue_file(self.task, config.data_dir, split)
        columns = None if path is None else (config.text_column, config.text_pair_column, config.label_column)
        parser = glue_data.glue_line_parser(self.task, file, split, columns)
        if parser is None:
            if stream:
                raise UserInputError(f"--stream_train_data: {file} cannot be streamed; expected a local TSV or "
                                     "JSON-lines file (one record a line).")
            return None
        if stream is None and os.path.getsize(file) < streaming.STREAMING_MIN_BYTES:
            return None
        header_lines, parse = parser

        def featurize(examples):
            return (glue_data.encode_examples(self.tokenizer, examples, config.max_seq_length),
                    glue_data.label_ids(self.task, examples))

        logger.info(f"streaming {file}: reading it once to check and count its examples")
        return streaming.StreamedExamples(file, parse, featurize, header_lines)

    def setup(self, tokenizer):
        """Reads and validates every split the flags ask for (train, dev, test), settles the label set (your
        own data) and encodes them; a large GLUE training file is checked now and streamed during training
        (`streamed_split`)."""
        super().setup(tokenizer)
        config = self.config
        wanted = [kind for kind, flag in (("train", config.do_train), ("dev", config.do_eval),
                                          ("test", config.do_predict)) if flag]
        files = {kind: self.split_files(kind) for kind in wanted}
        stream = None
        if "train" in files:
            (split, path), = files["train"]
            stream = self.streamed_split(split, path)
        examples = {kind: {split: self.read_examples(split, path) for split, path in files[kind]}
                    for kind in wanted if not (kind == "train" and stream)}
        if self.task is None:
            self.label_names = self.own_label_names({kind: next(iter(v.values())) for kind, v in examples.items()})
            self.main_metric = "spearmanr" if self.regression else "accuracy"
            regression = f"a regression ({'--regression' if self.config.regression else 'float labels'})"
            logger.info(f"labels: {regression if self.regression else self.label_names}")
        splits = {kind: {split: self.load_split(split, rows) for split, rows in examples[kind].items()}
                  for kind in examples}
        self.train_set = stream or (splits["train"]["train"] if "train" in splits else None)
        self.dev_sets = splits.get("dev", {})
        self.test_sets = splits.get("test", {})

    def texts_read(self):
        """Both sequences of every example of every split read (of a streamed training file, its first
        `UNKNOWN_TOKENS_SAMPLE` examples)."""
        examples = [split.examples for split in [*self.dev_sets.values(), *self.test_sets.values()]]
        if isinstance(self.train_set, streaming.StreamedExamples):
            examples.append(self.train_set.examples(UNKNOWN_TOKENS_SAMPLE))
        elif self.train_set:
            examples.append(self.train_set.examples)
        return [text for split in examples for e in split for text in (e.text_a, e.text_b) if text]

    def preprocessor_settings(self):
        return {"long_input": self.config.long_input}

    def trained_labels(self):
        """The label names (None: a regression)."""
        return None if self.label_names is None else list(self.label_names)

    def build_model(self):
        """A BertClassifier on the checkpoint, with its classifier head when it has one."""
        num_classes = 1 if self.regression else len(self.label_names)
        return self.load_model(BertClassifier, num_classes=num_classes, dropout=self.config.classifier_dropout)

    def training_set(self, distribution):
        if isinstance(self.train_set, streaming.StreamedExamples):
            stream = self.train_set
            return TrainingSet(stream, None, stream.num_examples,
                               f"{stream.num_examples} training examples streamed from {stream.path}")
        features, labels, examples, example_index = self.train_set
        if example_index is None:
            return TrainingSet(features, labels, len(examples), f"{len(examples)} training examples")
        return TrainingSet(features, labels[example_index], len(example_index),
                           f"{len(examples)} training examples, {len(example_index)} windows")

    def predictions(self, model, split):
        """Class ids [N] (a regression: float scores [N]) of every example of a `ClassificationSplit`, in order
        (`class_scores.class_predictions` of its logits, a long text's windows pooled)."""
        logits = batching.predict_bucketed(model, split.features, batch_size=self.config.eval_batch_size,
                                           **batching_options(self.config))
        logits = window_logits(logits, split.example_index, len(split.examples), self.config.long_input)
        return class_predictions(logits, self.regression)

    def evaluate(self, model):
        """The task's GLUE metrics on its dev set(s) (your own data: accuracy, or a regression's correlations);
        MNLI's mismatched metrics get the prefix "mm_"."""
        metrics = {}
        for split, data in self.dev_sets.items():
            values = glue_task_metrics(self.task or ("stsb" if self.regression else "sst2"),
                                       self.predictions(model, data), data.labels)
            prefix = "mm_" if split == "dev_mismatched" else ""
            metrics.update({prefix + k: v for k, v in values.items()})
        return metrics

    def save_model(self, model, directory):
        """The model directory, its labels' names in config.json's `id2label` (a GLUE task's
        `glue_data.model_label_names`: SST-2's "negative" and "positive"), the `--long_input` mode (the
        preprocessor's, which the classifier records)."""
        names = glue_data.model_label_names(self.task) if self.task else self.label_names
        super().save_model(model, directory, label_names=names)

    def predict(self, model, results):
        """Writes the GLUE submission file of every test split (CoLA.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv); your
        own data: test_predictions.tsv."""
        for split, data in self.test_sets.items():
            name = glue_data.submission_file_name(self.task, split) if self.task else TEST_PREDICTIONS_FILE
            path = os.path.join(self.config.output_dir, name)
            glue_data.write_submission(path, self.label_names, self.predictions(model, data))
            logger.info(f"wrote {len(data.examples)} test predictions to {path}")
        return results

    def write_results(self, results):
        if not self.config.do_eval:
            return
        results["task_name"] = self.task
        results["num_dev_examples"] = {split: len(v.examples) for split, v in self.dev_sets.items()}
        write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
        logger.info(f"{self.name} dev: {metrics_text(results)}")
