"""What a task model's directory records of its constructor arguments, read back by `from_pretrained`.

A task model class lists its `StoredSetting`s (`BertTaskModel.stored_settings`); each one ties constructor
arguments to config.json entries both ways:

- `save(model, label_names)`: the config.json entries of a model (`save_pretrained` writes them);
- `load(checkpoint, backbone, given)`: the constructor arguments of a model loaded from a `ModelDirectory`,
  from those the caller gave (`given`, without None), the directory's entries and the head weights the backbone
  found (`backbone.head_weights`); a given value the stored head cannot take is a `UserInputError`;
- `describe(checkpoint)`: what the entries say of a directory, for messages ("with a CRF");
- `keys` / `head`: the entries it writes, and whether they describe the head (`ignore_stored_head` leaves
  those out).

The settings every task shares are here (`ClassCount`, `BilstmUnits`, `ConfigEntry`); a class's own ones are
defined beside it (the CRF, the pretraining objective, the SQuAD decoding, the feature-based tagger).

Examples:

>>> ConfigEntry("num_choices", default=4).save(type("Model", (), {"num_choices": 5})(), None)
{'num_choices': 5}
"""

import numpy as np

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.utils.errors import UserInputError


class StoredSetting:
    """Constructor arguments of a task model and the config.json entries that record them (module docstring).

    Attributes:
        arguments: the constructor arguments `load` resolves.
        keys: the config.json entries `save` writes.
        head: whether the entries describe the head (left out with `ignore_stored_head`).
    """

    arguments = ()
    keys = ()
    head = True

    def save(self, model, label_names=None):
        """The config.json entries of `model` (`label_names`: those given to `save_pretrained`, or None)."""
        return {}

    def load(self, checkpoint, backbone, given):
        """The constructor arguments of `self.arguments` for a model loaded from `checkpoint` (`given`: those of
        them the caller passed, None left out)."""
        return dict(given)

    def describe(self, checkpoint):
        """What the entries say of the directory, for messages (e.g. "with a CRF"), or None."""
        return None


class ConfigEntry(StoredSetting):
    """One constructor argument kept as one config.json entry of the same name: given, else the stored value,
    else `default` (None: the constructor's). `skip` values are not written (e.g. None)."""

    def __init__(self, argument, default=None, head=True, skip=()):
        self.arguments = self.keys = (argument,)
        self.default = default
        self.head = head
        self.skip = tuple(skip)

    def save(self, model, label_names=None):
        value = getattr(model, self.arguments[0])
        return {} if any(value is s for s in self.skip) else {self.keys[0]: value}

    def load(self, checkpoint, backbone, given):
        name = self.arguments[0]
        value = given.get(name, checkpoint.setting(self.keys[0], self.default))
        return {} if value is None else {name: value}


class ClassCount(StoredSetting):
    """`num_classes`, with the label names in config.json's `id2label` / `label2id` (`LABEL_i` when none are
    given): given, else the number of rows of the stored head weight `weight`; neither: `UserInputError`
    "{directory}: {missing}; pass num_classes."."""

    arguments = ("num_classes",)
    keys = ("id2label", "label2id")

    def __init__(self, weight="classifier.weight", missing="no classifier weights in the checkpoint"):
        self.weight = weight
        self.missing = missing

    def save(self, model, label_names=None):
        return model_io.label_entries(model.num_classes, label_names)

    def load(self, checkpoint, backbone, given):
        if "num_classes" in given:
            return dict(given)
        stored = backbone.head_weights.get(self.weight)
        if stored is None:
            raise UserInputError(f"{checkpoint.path}: {self.missing}; pass num_classes.")
        return {"num_classes": int(np.asarray(stored).shape[0])}


class BilstmUnits(StoredSetting):
    """The "+ BiLSTM" of a token-level head (`bilstm_units`, config.json's entry of that name, written when there
    is one): None given: the stored one; a given one must equal a stored one (its weights would not fit)."""

    arguments = keys = ("bilstm_units",)

    def save(self, model, label_names=None):
        return {} if model.bilstm_units is None else {"bilstm_units": model.bilstm_units}

    def load(self, checkpoint, backbone, given):
        stored = checkpoint.setting("bilstm_units")
        units = given.get("bilstm_units")
        if units is None:
            return {"bilstm_units": stored}
        if stored is not None and int(stored) != int(units):
            raise UserInputError(f"{checkpoint.path}: the checkpoint's head has a BiLSTM of {stored} units (config.json "
                                 f"bilstm_units), not {units}; pass bilstm_units=None to load it.")
        return {"bilstm_units": units}

    def describe(self, checkpoint):
        return "with a BiLSTM" if checkpoint.setting("bilstm_units") else None
