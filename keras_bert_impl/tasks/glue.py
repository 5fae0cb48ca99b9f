"""GLUE fine-tuning (google-research/bert run_classifier.py): sentence(-pair) classification, and STS-B
regression, with a `BertClassifier` over the pooled [CLS] output.

Reads `--data_dir`'s train.tsv / dev*.tsv / test*.tsv (`data/glue_data.py`), or a split from
`--train_file` / `--validation_file` / `--test_file` (JSON lines, JSON, CSV, TSV, parquet; columns named by
`--text_column`, `--text_pair_column`, `--label_column`), which replaces --data_dir's file(s) of that split
(MNLI: a --validation_file is its one dev set, a --test_file its one test set). Every split the run needs is
read in `setup`, before the model is built. Evaluates the task's GLUE metrics (MNLI's mismatched ones
prefixed "mm_"); writes the GLUE server's submission files.
"""

import os

import numpy as np

from keras_bert_impl.data import batching, glue_data
from keras_bert_impl.metrics.glue_metrics import glue_task_metrics
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.tasks.base import (
    FinetuningTask,
    TrainingSet,
    batching_options,
    config_overrides,
    load_backbone,
    save_model_directory,
)
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import write_json

# split kind -> the flag of its file.
_FILE_FLAGS = {"train": "train_file", "dev": "validation_file", "test": "test_file"}


class GlueTask(FinetuningTask):
    """One GLUE task (`--task_name`): cola, sst2, mrpc, qqp, stsb, mnli, qnli, rte or wnli."""

    def __init__(self, args):
        super().__init__(args)
        self.task = glue_data.canonical_task(args.task_name)
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
        path = getattr(self.args, _FILE_FLAGS[kind], None)
        if path:
            return [(splits[0], path)]
        if not self.args.data_dir:
            raise UserInputError(f"--data_dir or --{_FILE_FLAGS[kind]} is required for the {kind} data.")
        return [(split, None) for split in splits]

    def read_examples(self, split, path):
        """The `InputExample`s of one split: from its file flag's file, else from --data_dir."""
        if path is None:
            return glue_data.read_glue_examples(self.task, self.args.data_dir, split)
        return glue_data.read_glue_records(self.task, path, split, getattr(self.args, "text_column", None),
                                          getattr(self.args, "text_pair_column", None),
                                          getattr(self.args, "label_column", "label"))

    def load_split(self, split, path=None):
        """(features, labels or None, examples) of one split."""
        examples = self.read_examples(split, path)
        features = glue_data.encode_examples(self.tokenizer, examples, self.args.max_seq_length)
        labels = None if split.startswith("test") else glue_data.label_ids(self.task, examples)
        return features, labels, examples

    def setup(self, tokenizer):
        """Reads, validates and encodes every split the flags ask for (train, dev, test)."""
        super().setup(tokenizer)
        if self.args.do_train:
            (split, path), = self.split_files("train")
            self.train_set = self.load_split(split, path)
        if self.args.do_eval:
            self.dev_sets = {split: self.load_split(split, path) for split, path in self.split_files("dev")}
        if self.args.do_predict:
            self.test_sets = {split: self.load_split(split, path) for split, path in self.split_files("test")}

    def build_model(self):
        """A BertClassifier on the checkpoint, with its classifier head when it has a matching one."""
        num_outputs, dropout = glue_data.num_outputs(self.task), self.args.classifier_dropout
        if self.args.init_checkpoint:
            return BertClassifier.from_pretrained(self.args.init_checkpoint, num_classes=num_outputs, dropout=dropout,
                                                  **config_overrides(self.args))
        return BertClassifier(load_backbone(self.args), num_classes=num_outputs, dropout=dropout)

    def training_set(self):
        features, labels, examples = self.train_set
        return TrainingSet(features, labels, len(examples), f"{len(examples)} training examples")

    def predictions(self, model, features):
        """Class ids [N] (STS-B: float scores [N]) for every example, in order."""
        logits = batching.predict_bucketed(model, features, batch_size=self.args.eval_batch_size,
                                           **batching_options(self.args))
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
        save_model_directory(model, self.tokenizer, directory, self.args.max_seq_length,
                             label_names=glue_data.get_labels(self.task))

    def predict(self, model, results):
        """Writes the GLUE submission file of every test split (CoLA.tsv, ..., MNLI-m.tsv, MNLI-mm.tsv)."""
        for split, (features, _, examples) in self.test_sets.items():
            path = os.path.join(self.args.output_dir, glue_data.submission_file_name(self.task, split))
            glue_data.write_submission(path, self.task, self.predictions(model, features))
            print(f"wrote {len(examples)} test predictions to {path}")
        return results

    def write_results(self, results):
        if not self.args.do_eval:
            return
        results["task_name"] = self.task
        results["num_dev_examples"] = {split: len(v[2]) for split, v in self.dev_sets.items()}
        write_json(os.path.join(self.args.output_dir, "eval_results.json"), results)
        print(f"{self.task} dev: " + ", ".join(f"{k}={v:.4f}" for k, v in sorted(results.items())
                                               if isinstance(v, float)))
