"""SWAG fine-tuning (multiple choice; Devlin et al. §4.4) with a `BertMultipleChoice`.

Reads `--data_dir`'s train.csv, val.csv and test.csv (`data/swag_data.py`), or a split from `--train_file`
/ `--validation_file` / `--test_file` (the original CSV, or datasets' JSON lines, JSON, CSV, parquet), which
replaces --data_dir's file of that split; every split the run needs is read in `setup`, before the model
is built. Each choice is packed as `[CLS] sent1 [SEP] sent2 ending_i [SEP]`, the model scores the four
choices and a softmax across them is trained with cross-entropy. Evaluates dev accuracy; writes test_predictions.csv (`id,label`).
"""

import logging
import os

from keras_bert_impl.data import batching, swag_data
from keras_bert_impl.metrics.glue_metrics import accuracy
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.tasks.base import FinetuningTask, TrainingSet, batching_options, warn_cut_examples
from keras_bert_impl.data.class_scores import class_predictions
from keras_bert_impl.tasks.configs import SwagConfig
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, write_json

logger = logging.getLogger(__name__)

SPLIT_FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}
# split -> the flag of its file.
_FILE_FLAGS = {"train": "train_file", "dev": "validation_file", "test": "test_file"}


class SwagTask(FinetuningTask):
    """SWAG: four endings per example, the label is the index of the right one. `setup` reads the splits
    the config asks for into `train`, `dev` and `test`: (features, labels or None, examples) or None."""

    name = "swag"
    main_metric = "accuracy"
    config_class = SwagConfig

    def split_file(self, split):
        """The file of "train", "dev" or "test": its file flag's, else --data_dir's train.csv / val.csv /
        test.csv."""
        path = getattr(self.config, _FILE_FLAGS[split])
        if path:
            return path
        if not self.config.data_dir:
            raise UserInputError(f"--data_dir or --{_FILE_FLAGS[split]} is required for the {split} data.")
        path = os.path.join(self.config.data_dir, SPLIT_FILES[split])
        if not os.path.isfile(path):
            raise UserInputError(f"{path}: no such file (--data_dir holds SWAG's {', '.join(SPLIT_FILES.values())}; "
                                 f"--{_FILE_FLAGS[split]} names another file).")
        return path

    def load_split(self, split):
        """(features, labels or None, examples) of "train", "dev" or "test"."""
        path = self.split_file(split)
        examples = swag_data.read_swag_file(path, labelled=split != "test")
        features = swag_data.encode_swag_examples(self.tokenizer, examples, self.config.max_seq_length)
        choices = [(e.context, f"{e.start_ending} {ending}") for e in examples for ending in e.endings]
        warn_cut_examples(self.tokenizer, [c for c, _ in choices], [ending for _, ending in choices],
                          {"token_ids": [row for rows in features["token_ids"] for row in rows]},
                          self.config.max_seq_length, f"the {split} set", "a larger --max_seq_length reads more",
                          what="choices")
        labels = None if split == "test" else swag_data.swag_labels(examples)
        return features, labels, examples

    def setup(self, tokenizer):
        """Reads, validates and encodes every split the flags ask for (train, dev, test)."""
        super().setup(tokenizer)
        self.train = self.load_split("train") if self.config.do_train else None
        self.dev = self.load_split("dev") if self.config.do_eval else None
        self.test = self.load_split("test") if self.config.do_predict else None

    def texts_read(self):
        """The context, the start of the ending and the endings of every example of every split read."""
        return [text for split in (self.train, self.dev, self.test) if split for e in split[2]
                for text in (e.context, e.start_ending, *e.endings)]

    def build_model(self):
        """A BertMultipleChoice on the checkpoint, with its scoring head when it has one."""
        return self.load_model(BertMultipleChoice, num_choices=swag_data.NUM_CHOICES)

    def training_set(self, distribution):
        features, labels, examples = self.train
        return TrainingSet(features, labels, len(examples), f"{len(examples)} training examples")

    def logits(self, model, features, batch_size):
        """The choices' scores [N, 4]."""
        return batching.predict_bucketed(model, features, batch_size=batch_size, **batching_options(self.config))

    def evaluate(self, model):
        return {"accuracy": accuracy(self.logits(model, self.dev[0], self.config.eval_batch_size), self.dev[1])}

    def predict(self, model, results):
        """Writes test_predictions.csv: `id,label` with the predicted choice of every test example."""
        features, _, examples = self.test
        predicted = class_predictions(self.logits(model, features, self.config.predict_batch_size))
        path = os.path.join(self.config.output_dir, "test_predictions.csv")
        with atomic_open(path) as f:
            f.write("id,label\n")
            f.writelines(f"{e.swag_id},{int(p)}\n" for e, p in zip(examples, predicted))
        logger.info(f"wrote {len(examples)} test predictions to {path}")
        return results

    def write_results(self, results):
        if not self.config.do_eval:
            return
        results["num_dev_examples"] = len(self.dev[2])
        write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
        logger.info(f"swag dev accuracy={results['accuracy']:.4f}")
