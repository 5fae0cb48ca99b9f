"""GLUE fine-tuning (google-research/bert run_classifier.py): sentence(-pair) classification, and STS-B
regression, with a `BertClassifier` over the pooled [CLS] output.

Reads `--data_dir`'s train.tsv / dev*.tsv / test*.tsv (`data/glue_data.py`), or a split from
`--train_file` / `--validation_file` / `--test_file` (JSON lines, JSON, CSV, TSV, parquet; columns named by
`--text_column`, `--text_pair_column`, `--label_column`), which replaces --data_dir's file(s) of that split
(MNLI: a --validation_file is its one dev set, a --test_file its one test set). Every split the run needs is
read in `setup`, before the model is built; a training file of `data.streaming.STREAMING_MIN_BYTES` or more
(or any, with --stream_train_data) is checked there in one pass and streamed during training, in bounded
memory. Evaluates the task's GLUE metrics (MNLI's mismatched ones
prefixed "mm_"); writes the GLUE server's submission files.
"""

import dataclasses
import os
from typing import Optional

import numpy as np

from keras_bert_impl.data import batching, glue_data, streaming
from keras_bert_impl.metrics.glue_metrics import glue_task_metrics
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.tasks.base import FinetuningConfig, FinetuningTask, TrainingSet, batching_options
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import write_json
from keras_bert_impl.utils.settings import BOOLEAN, NUMBER, optional, setting

# split kind -> the flag of its file.
_FILE_FLAGS = {"train": "train_file", "dev": "validation_file", "test": "test_file"}
# The examples of a streamed training file whose texts the [UNK] report reads (it reads the others whole).
UNKNOWN_TOKENS_SAMPLE = 100_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlueConfig(FinetuningConfig):
    """The settings of a GLUE run: `FinetuningConfig`'s and run_glue.py's own flags (same names, same
    defaults); `task_name` and `output_dir` are required.

    Examples:

    >>> config = GlueConfig(task_name="sst2", data_dir="data/sentiment", output_dir="/tmp/sst2", do_train=True)
    >>> config.classifier_dropout, config.label_column, config.max_seq_length
    (0.1, 'label', 128)
    """

    task_name: str  # cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte or wnli (any spelling `canonical_task` reads)
    classifier_dropout: float = setting(0.1, NUMBER)
    # A split's file of the datasets ecosystem instead of --data_dir's, and its columns.
    train_file: Optional[str] = None
    validation_file: Optional[str] = None
    test_file: Optional[str] = None
    text_column: Optional[str] = None  # None: the task's glue datasets column
    text_pair_column: Optional[str] = None  # None: the task's; "": none
    label_column: str = "label"
    # Stream the training file (`data.streaming`): None: from `streaming.STREAMING_MIN_BYTES` up.
    stream_train_data: Optional[bool] = setting(None, optional(BOOLEAN))


class GlueTask(FinetuningTask):
    """One GLUE task (`GlueConfig.task_name`): cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte or wnli."""

    config_class = GlueConfig

    def __init__(self, config):
        super().__init__(config)
        self.task = glue_data.canonical_task(config.task_name)
        self.name = self.task
        self.main_metric = glue_data.GLUE_MAIN_METRIC[self.task]
        self.regression = glue_data.get_labels(self.task) is None
        self.train_set = None
        self.dev_sets = {}
        self.test_sets = {}

    def split_files(self, kind):
        """[(split, file)] of "train", "dev" or "test": the file flag's file as the first split of that kind,
        else --data_dir's `{split}.tsv` for every split of that kind (file None)."""
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
        if path is None:
            return glue_data.read_glue_examples(self.task, self.config.data_dir, split)
        return glue_data.read_glue_records(self.task, path, split, self.config.text_column,
                                          self.config.text_pair_column, self.config.label_column)

    def load_split(self, split, path=None):
        """(features, labels or None, examples) of one split."""
        examples = self.read_examples(split, path)
        features = glue_data.encode_examples(self.tokenizer, examples, self.config.max_seq_length)
        labels = None if split.startswith("test") else glue_data.label_ids(self.task, examples)
        return features, labels, examples

    def streamed_split(self, split, path=None):
        """The training split streamed from its file (`streaming.StreamedExamples`, checked line by line in one
        pass) when --stream_train_data says so (unset: a file of at least `streaming.STREAMING_MIN_BYTES`); None
        to read it in memory. A TSV or JSON-lines file streams (`glue_data.glue_line_parser`); CSV, JSON and
        parquet files are read in memory."""
        stream = self.config.stream_train_data
        if stream is False:
            return None
        config = self.config
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

        print(f"streaming {file}: reading it once to check and count its examples")
        return streaming.StreamedExamples(file, parse, featurize, header_lines)

    def setup(self, tokenizer):
        """Reads, validates and encodes every split the flags ask for (train, dev, test); a large training file
        is checked now and streamed during training (`streamed_split`)."""
        super().setup(tokenizer)
        if self.config.do_train:
            (split, path), = self.split_files("train")
            self.train_set = self.streamed_split(split, path) or self.load_split(split, path)
        if self.config.do_eval:
            self.dev_sets = {split: self.load_split(split, path) for split, path in self.split_files("dev")}
        if self.config.do_predict:
            self.test_sets = {split: self.load_split(split, path) for split, path in self.split_files("test")}

    def texts_read(self):
        """Both sequences of every example of every split read (of a streamed training file, its first
        `UNKNOWN_TOKENS_SAMPLE` examples)."""
        splits = [examples for _, _, examples in [*self.dev_sets.values(), *self.test_sets.values()]]
        if isinstance(self.train_set, streaming.StreamedExamples):
            splits.append(self.train_set.examples(UNKNOWN_TOKENS_SAMPLE))
        elif self.train_set:
            splits.append(self.train_set[2])
        return [text for examples in splits for e in examples for text in (e.text_a, e.text_b) if text]

    def build_model(self):
        """A BertClassifier on the checkpoint, with its classifier head when it has a matching one."""
        return self.load_model(BertClassifier, num_classes=glue_data.num_outputs(self.task),
                               dropout=self.config.classifier_dropout)

    def training_set(self, distribution):
        if isinstance(self.train_set, streaming.StreamedExamples):
            stream = self.train_set
            return TrainingSet(stream, None, stream.num_examples,
                               f"{stream.num_examples} training examples streamed from {stream.path}")
        features, labels, examples = self.train_set
        return TrainingSet(features, labels, len(examples), f"{len(examples)} training examples")

    def predictions(self, model, features):
        """Class ids [N] (STS-B: float scores [N]) for every example, in order."""
        logits = batching.predict_bucketed(model, features, batch_size=self.config.eval_batch_size,
                                           **batching_options(self.config))
        return logits[:, 0] if self.regression else np.argmax(logits, axis=-1)

    def evaluate(self, model):
        """The task's GLUE metrics on its dev set(s); MNLI's mismatched metrics get the prefix "mm_"."""
        metrics = {}
        for split, (features, labels, _) in self.dev_sets.items():
            values = glue_task_metrics(self.task, self.predictions(model, features), labels)
            prefix = "mm_" if split == "dev_mismatched" else ""
            metrics.update({prefix + k: v for k, v in values.items()})
        return metrics

    def save_model(self, model, directory):
        super().save_model(model, directory, label_names=glue_data.get_labels(self.task))

    def predict(self, model, results):
        """Writes the GLUE submission file of every test split (CoLA.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv)."""
        for split, (features, _, examples) in self.test_sets.items():
            path = os.path.join(self.config.output_dir, glue_data.submission_file_name(self.task, split))
            glue_data.write_submission(path, self.task, self.predictions(model, features))
            print(f"wrote {len(examples)} test predictions to {path}")
        return results

    def write_results(self, results):
        if not self.config.do_eval:
            return
        results["task_name"] = self.task
        results["num_dev_examples"] = {split: len(v[2]) for split, v in self.dev_sets.items()}
        write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
        print(f"{self.task} dev: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(results.items())
                                               if isinstance(v, float)))
