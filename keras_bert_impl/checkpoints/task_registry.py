"""The task registry: every model class a model directory can hold, with its one identity.

A model class registers itself where it is defined, with the decorator `register_task` (reached from the
models through `keras_bert_impl.checkpoints.model_io`), and its `TaskEntry` holds all its names:

    architectures      the config.json `architectures` entries that hold it (Hugging Face's class names); the
                       first is what it is saved as, unless the model says otherwise (`saved_architecture`)
    pipeline           the `pipeline(task, model)` name that answers with it (transformers' task name), and
    pipeline_aliases   transformers' other names of that task
    serving            what its export serves (the serving kind: a key of the export's table)
    recognizes         ModelDirectory -> bool, for a class whose directories carry an architecture that
                       another class owns (a feature-based tagger's is BertModel)
    backbone_source    its directories are a backbone for every task (a plain BERT, a pretraining model)

This module knows no class by name: the registered classes are what the models declare, and everything a
directory's class says about itself (its heads, its config.json entries, how it describes a directory) is
asked of the class. Pipelines and export look classes up here instead of keeping tables of class names.
"""

import copy
import dataclasses
from typing import Callable, Optional

from keras_bert_impl.utils import registering_modules
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.tensorflow_logs import import_keras_quietly

# The architecture of a directory whose config.json names none (a Google checkpoint, a keras-hub preset).
PLAIN_ARCHITECTURE = "BertModel"


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """One registered model class and its names (see the module docstring)."""

    model_class: type
    architectures: tuple = ()
    pipeline: Optional[str] = None
    pipeline_aliases: tuple = ()
    serving: Optional[str] = None
    recognizes: Optional[Callable] = None
    backbone_source: bool = False

    @property
    def name(self):
        """The class's name, as messages say it."""
        return self.model_class.__name__


# "module.QualName" -> TaskEntry, in registration order (a module imported again replaces its classes' entries).
_ENTRIES = {}


def _key(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def register_task(architectures=(), pipeline=None, pipeline_aliases=(), serving=None, recognizes=None,
                  backbone_source=False):
    """Class decorator: registers the model class with its names (`TaskEntry`'s fields).

    Examples:

    >>> import keras
    >>> @register_task(architectures=("BertForToyTask",), pipeline="toy-task", serving="classifier")
    ... class ToyModel(keras.Model):
    ...     pass
    >>> entry_of(ToyModel).architectures, pipeline_classes("toy-task") == [ToyModel]
    (('BertForToyTask',), True)
    >>> unregister(ToyModel)
    """
    def register(cls):
        _ENTRIES[_key(cls)] = TaskEntry(cls, tuple(architectures), pipeline, tuple(pipeline_aliases), serving,
                                        recognizes, bool(backbone_source))
        return cls

    return register


def unregister(cls):
    """Removes the entry of `cls` (a class registered for a while, e.g. by a test)."""
    _ENTRIES.pop(_key(cls), None)


# The name under which the package root declares the module whose import registers the package's model classes.
TASK_MODELS_REGISTRY = "task_models"


def _import_task_models():
    """Imports the package's model classes: the package imports lazily, and a class registers when its module is
    imported. The models sit above this tier: the package root declares their package
    (`utils.registering_modules`), imported here after Keras (TensorFlow's start-up lines filtered)."""
    import_keras_quietly()
    registering_modules.import_declared(TASK_MODELS_REGISTRY, "models")


def entries():
    """The registered `TaskEntry`s, in registration order."""
    _import_task_models()
    return list(_ENTRIES.values())


def entry_of(model_or_class):
    """The `TaskEntry` of a model (or model class): that of the nearest class in its MRO that is registered.

    Raises:
        TypeError: no class of its MRO is registered (it cannot be written as a model directory).
    """
    cls = model_or_class if isinstance(model_or_class, type) else type(model_or_class)
    for base in cls.__mro__:
        entry = _ENTRIES.get(_key(base))
        if entry is not None:
            return entry
    raise TypeError(f"{cls.__name__} has no Hugging Face layout; save it with model.save('model.keras').")


def known_architectures():
    """Every architecture a registered class is saved or recognized as, once each, in registration order."""
    return list(dict.fromkeys(a for entry in entries() for a in entry.architectures))


def stored_entry(checkpoint):
    """The `TaskEntry` of the class a `ModelDirectory` holds: the class that recognizes it, else the class of
    its config.json `architectures` (BertModel without one).

    Raises:
        UserInputError: an architecture no registered class has, naming the file and the known ones.
    """
    for entry in entries():
        if entry.recognizes is not None and entry.recognizes(checkpoint):
            return entry
    architecture = checkpoint.architecture or PLAIN_ARCHITECTURE
    for entry in entries():
        if entry.recognizes is None and architecture in entry.architectures:
            return entry
    raise UserInputError(f"{checkpoint.config_file}: architecture {architecture!r} is not one of this package's "
                         f"models ({', '.join(known_architectures())}).")


def architecture_class(architecture):
    """The registered class saved as the Hugging Face `architecture` (e.g. "BertForPreTraining").

    Raises:
        KeyError: no registered class is saved as it.
    """
    for entry in entries():
        if entry.recognizes is None and architecture in entry.architectures:
            return entry.model_class
    raise KeyError(f"no registered model class is saved as {architecture!r}")


def pipeline_classes(name):
    """The registered classes that the pipeline `name` runs, in registration order."""
    return [entry.model_class for entry in entries() if entry.pipeline == name]


def pipeline_aliases():
    """{alias: pipeline name} of every registered class (transformers' other names of its task)."""
    return {alias: entry.pipeline for entry in entries() for alias in entry.pipeline_aliases}


def _stored_description(checkpoint, stored):
    """What a directory holds, for messages: e.g. "a BertTokenClassifier (BertForTokenClassification, with a CRF)":
    its architecture and the details its class reads from it (`describe_directory`)."""
    describe = getattr(stored.model_class, "describe_directory", None)
    details = [checkpoint.architecture or PLAIN_ARCHITECTURE, *(describe(checkpoint) if describe else [])]
    return f"a {stored.name} ({', '.join(details)})"


def check_loads_as(checkpoint, cls):
    """Refuses (`UserInputError`) to load the `ModelDirectory` of another task's model as a `cls`: its head
    would be dropped or, where the weight names coincide (a token classifier's `classifier.*` read as a sequence
    classifier's), taken for another head. A backbone or pretraining directory (`backbone_source`) loads into
    every task, and a directory whose architecture no class here stores (e.g. BertForNextSentencePrediction)
    loads its backbone.

    Examples:

    >>> import tempfile
    >>> from keras_bert_impl.config import BertConfig
    >>> from keras_bert_impl.checkpoints.model_directory import ModelDirectory
    >>> from keras_bert_impl.models.backbone import BertBackbone
    >>> from keras_bert_impl.models.classifier import BertClassifier
    >>> from keras_bert_impl.models.token_classifier import BertTokenClassifier
    >>> directory = tempfile.mkdtemp()
    >>> BertTokenClassifier(BertBackbone(BertConfig.preset("bert_tiny")), 9, use_crf=True).save_pretrained(directory)
    >>> check_loads_as(ModelDirectory(directory), BertTokenClassifier)
    >>> check_loads_as(ModelDirectory(directory), BertClassifier)
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: ...: holds a BertTokenClassifier (BertForTokenClassification, with a CRF), not a BertClassifier; load it with BertTokenClassifier.from_pretrained, or pass ignore_stored_head=True to put a new BertClassifier head on its backbone.
    """
    try:
        stored = stored_entry(checkpoint)
    except UserInputError:
        return
    if stored.backbone_source or issubclass(cls, stored.model_class):
        return
    raise UserInputError(f"{checkpoint.directory}: holds {_stored_description(checkpoint, stored)}, not a "
                         f"{cls.__name__}; load it with {stored.name}.from_pretrained, or pass "
                         f"ignore_stored_head=True to put a new {cls.__name__} head on its backbone.")


def head_setting_keys():
    """The config.json entries that describe a directory's task head: `architectures` and the head entries each
    registered class declares (`head_setting_keys()` of the class: labels, CRF, BiLSTM, ...)."""
    keys = ["architectures"]
    for entry in entries():
        declared = getattr(entry.model_class, "head_setting_keys", None)
        keys += list(declared()) if declared else []
    return tuple(dict.fromkeys(keys))


def backbone_only(checkpoint):
    """The `ModelDirectory` `checkpoint` seen as a backbone's directory: its config.json without the entries of
    its task head (`head_setting_keys`), so that a model loaded from it takes none of its head's settings (its
    head weights are the loader's to leave out)."""
    head_keys = set(head_setting_keys())
    view = copy.copy(checkpoint)
    view.__dict__["config"] = {k: v for k, v in checkpoint.config.items() if k not in head_keys}
    return view
