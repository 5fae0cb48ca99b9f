"""How each model class is stored in a model directory, and which class a directory holds.

A `TaskLayout` per model class says what its directory looks like in Hugging Face's layout:

    class                    architectures entry            heads (weight rows)            config.json entries
    BertBackbone             BertModel                      -                              -
    BertClassifier           BertForSequenceClassification  classifier                     id2label, problem_type
    BertMultipleChoice       BertForMultipleChoice          classifier                     -
    BertSpanQA               BertForQuestionAnswering       qa_outputs (+ BiLSTM)          bilstm_units
    BertTokenClassifier      BertForTokenClassification     classifier (+ BiLSTM, CRF)     id2label, use_crf, bilstm_units
    BertFeatureBasedTagger   BertModel                      feature-based tagger           id2label, feature_based_tagger
    BertPretrainer           BertForPreTraining / BertForMaskedLM / BertLMHeadModel        masked-LM (+ next-sentence)
                                                                                           keras_pretraining_objective
    BertSentenceEncoder      BertModel                      -                              - (its pooling, normalization
                                                                                           and length in the files of
                                                                                           sentence-transformers)

A layout may write files of its own beside config.json (`files`): the sentence encoder's directory is a
sentence-transformers one (`sentence_transformers_files`), told apart by its modules.json.

The layouts read the models' layers by their attribute names, as keras-hub's converters know its models:
the models (a higher tier) do not import this module; they register their classes
(`keras_bert_impl.checkpoints.model_io.register_model`) and reach it through `model_io`.
"""

import copy
import dataclasses

from keras_bert_impl.checkpoints.head_weights import (
    bilstm_table,
    classifier_table,
    crf_table,
    masked_lm_table,
    next_sentence_table,
    scalar_mix_table,
    span_table,
)
from keras_bert_impl.checkpoints.model_directory import label_entries
from keras_bert_impl.checkpoints.sentence_transformers_files import SentenceModules, write_sentence_modules
from keras_bert_impl.checkpoints.weight_tables import dense_entries
from keras_bert_impl.utils.errors import UserInputError

# config.json's entry with a feature-based tagger's settings, and the prefix of its weights.
FEATURE_TAGGER_KEY = "feature_based_tagger"
FEATURE_TAGGER_PREFIX = "classifier.feature_tagger"
# The settings a saved feature-based tagger fixes (its weights' shapes and what they were trained on).
FEATURE_TAGGER_SETTINGS = ("feature_layers", "feature_combine", "lstm_units", "num_lstm_layers")
# config.json's entry recording a pretraining objective other than mlm_nsp.
OBJECTIVE_KEY = "keras_pretraining_objective"
# The Hugging Face class each pretraining objective saves as (the paper's Table 5 rows).
PRETRAINING_ARCHITECTURES = {
    "mlm_nsp": "BertForPreTraining", "sop": "BertForPreTraining", "mlm": "BertForMaskedLM", "ltr": "BertLMHeadModel"
}


@dataclasses.dataclass(frozen=True)
class TaskLayout:
    """How one model class is stored.

    Attributes:
        architectures: the config.json `architectures` entries that hold this class (its directories are
            recognized by them; none: recognized otherwise).
        heads: model -> {head name: weight rows}, the rows of `checkpoints.head_weights`.
        settings: (model, label names or None) -> the config.json entries of the model's task.
        architecture: model -> the `architectures` entry it is saved with; None: `architectures[0]`.
        files: None, or (model, directory) -> writes the files the class keeps beside config.json (before it).
    """

    architectures: tuple
    heads: object = lambda model: {}
    settings: object = lambda model, label_names: {}
    architecture: object = None
    files: object = None

    def architecture_of(self, model):
        return self.architectures[0] if self.architecture is None else self.architecture(model)


def _bilstm(prefix, model):
    return {} if model.bilstm is None else {"BiLSTM": bilstm_table(prefix, model.bilstm)}


def _bilstm_setting(model):
    return {} if model.bilstm_units is None else {"bilstm_units": model.bilstm_units}


def _classifier_settings(model, label_names):
    problem_type = "regression" if model.num_classes == 1 else "single_label_classification"
    return dict(label_entries(model.num_classes, label_names), problem_type=problem_type)


def _token_classifier_heads(model):
    heads = {"classifier": classifier_table(model.classifier), **_bilstm("classifier", model)}
    if model.crf is not None:
        heads["CRF"] = crf_table(model.crf)
    return heads


def _feature_tagger_heads(model):
    rows = []
    if model.scalar_mix is not None:
        rows += scalar_mix_table(FEATURE_TAGGER_PREFIX, model.scalar_mix)
    for i, bilstm in enumerate(model.bilstms):
        rows += bilstm_table(f"{FEATURE_TAGGER_PREFIX}.lstm_{i}", bilstm)
    rows += dense_entries(f"{FEATURE_TAGGER_PREFIX}.classifier", model.classifier)
    return {"feature-based tagger": rows}


def _feature_tagger_settings(model, label_names):
    task_config = model.task_config()
    settings = {key: task_config[key] for key in (*FEATURE_TAGGER_SETTINGS, "feature_mode")}
    return dict(label_entries(model.num_classes, label_names), **{FEATURE_TAGGER_KEY: settings})


def _write_sentence_modules(model, directory):
    preprocessor = model.preprocessor
    write_sentence_modules(directory, SentenceModules(
        pooling=tuple(model.pooling), normalize=model.normalize,
        max_seq_length=None if preprocessor is None else preprocessor.sequence_length,
        embedding_dimension=model.backbone.config.hidden_size))


def _pretrainer_heads(model):
    heads = {"masked-LM": masked_lm_table(model.masked_lm_head)}
    if model.next_sentence_head is not None:
        heads["next-sentence"] = next_sentence_table(model.next_sentence_head)
    return heads


LAYOUTS = {
    "BertBackbone": TaskLayout(("BertModel",)),
    "BertClassifier": TaskLayout(
        ("BertForSequenceClassification",),
        heads=lambda model: {"classifier": classifier_table(model.output_dense)},
        settings=_classifier_settings),
    "BertMultipleChoice": TaskLayout(
        ("BertForMultipleChoice",),
        heads=lambda model: {"classifier": classifier_table(model.output_dense)}),
    # Google's cls/squad/output_weights and output_bias are read as qa_outputs.weight and .bias.
    "BertSpanQA": TaskLayout(
        ("BertForQuestionAnswering",),
        heads=lambda model: {"qa_outputs": span_table(model.qa_outputs), **_bilstm("qa_outputs", model)},
        settings=lambda model, label_names: _bilstm_setting(model)),
    "BertTokenClassifier": TaskLayout(
        ("BertForTokenClassification",),
        heads=_token_classifier_heads,
        settings=lambda model, label_names: dict(label_entries(model.num_classes, label_names),
                                                 use_crf=model.use_crf, **_bilstm_setting(model))),
    # A BertModel directory (transformers reads the backbone), told apart by its feature_based_tagger entry.
    "BertFeatureBasedTagger": TaskLayout(
        (), heads=_feature_tagger_heads, settings=_feature_tagger_settings, architecture=lambda model: "BertModel"),
    # mlm_nsp writes no objective entry; another objective is recorded for from_pretrained.
    "BertPretrainer": TaskLayout(
        tuple(dict.fromkeys(PRETRAINING_ARCHITECTURES.values())),
        architecture=lambda model: PRETRAINING_ARCHITECTURES[model.objective],
        heads=_pretrainer_heads,
        settings=lambda model, label_names: {} if model.objective == "mlm_nsp" else {OBJECTIVE_KEY: model.objective}),
    # A BertModel directory with the sentence-transformers modules (modules.json tells it apart).
    "BertSentenceEncoder": TaskLayout((), architecture=lambda model: "BertModel", files=_write_sentence_modules),
}

# config.json entries of a directory's task head (what `backbone_only` leaves out).
HEAD_SETTINGS = ("architectures", "id2label", "label2id", "problem_type", "use_crf", "bilstm_units",
                 FEATURE_TAGGER_KEY, OBJECTIVE_KEY)
# The classes whose directories every task loads its backbone from (their heads are no task's; a sentence
# encoder's pooling has no weights).
BACKBONE_CLASSES = ("BertBackbone", "BertPretrainer", "BertSentenceEncoder")

# The registered model classes by name (`register_model`).
_CLASSES = {}


def register_model(cls):
    """Class decorator: `cls` (or the class it derives from) has a layout; `model_class` can return it."""
    layout_of(cls)
    _CLASSES[cls.__name__] = cls
    return cls


def layout_of(model_or_class):
    """The `TaskLayout` of a model (or model class): that of the nearest class in its MRO that has one."""
    cls = model_or_class if isinstance(model_or_class, type) else type(model_or_class)
    for base in cls.__mro__:
        if base.__name__ in LAYOUTS:
            return LAYOUTS[base.__name__]
    raise TypeError(f"{cls.__name__} has no Hugging Face layout; save it with model.save('model.keras').")


def model_class(checkpoint):
    """The registered class of the model a `ModelDirectory` holds, read from config.json's `architectures`
    (a BertModel directory with a `feature_based_tagger` entry holds a `BertFeatureBasedTagger`; a
    sentence-transformers directory, with modules.json, a `BertSentenceEncoder`).

    Raises:
        UserInputError: an architecture no class here stores, naming the file and the known ones.
    """
    if checkpoint.setting(FEATURE_TAGGER_KEY) is not None:
        return _CLASSES["BertFeatureBasedTagger"]
    if "BertSentenceEncoder" in _CLASSES and checkpoint.sentence_modules is not None:
        return _CLASSES["BertSentenceEncoder"]
    architecture = checkpoint.architecture or "BertModel"
    for name, layout in LAYOUTS.items():
        if name in _CLASSES and architecture in layout.architectures:
            return _CLASSES[name]
    known = [a for layout in LAYOUTS.values() for a in layout.architectures]
    raise UserInputError(f"{checkpoint.config_file}: architecture {architecture!r} is not one of this package's "
                         f"models ({', '.join(dict.fromkeys(known))}).")


def _stored_description(checkpoint, stored):
    """What a directory holds, for messages: e.g. "a BertTokenClassifier (BertForTokenClassification, with a CRF)"."""
    details = [checkpoint.architecture or "BertModel"]
    if checkpoint.setting("use_crf"):
        details.append("with a CRF")
    if checkpoint.setting("bilstm_units"):
        details.append("with a BiLSTM")
    return f"a {stored.__name__} ({', '.join(details)})"


def check_loads_as(checkpoint, cls):
    """Refuses (`UserInputError`) to load the `ModelDirectory` of another task's model as a `cls`: its head
    would be dropped or, where the weight names coincide (a token classifier's `classifier.*` read as a sequence
    classifier's), taken for another head. A backbone or pretraining directory loads into every task, and a
    directory whose architecture no class here stores (e.g. BertForNextSentencePrediction) loads its backbone.

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
        stored = model_class(checkpoint)
    except UserInputError:
        return
    if stored.__name__ in BACKBONE_CLASSES or issubclass(cls, stored):
        return
    raise UserInputError(f"{checkpoint.directory}: holds {_stored_description(checkpoint, stored)}, not a "
                         f"{cls.__name__}; load it with {stored.__name__}.from_pretrained, or pass "
                         f"ignore_stored_head=True to put a new {cls.__name__} head on its backbone.")


def backbone_only(checkpoint):
    """The `ModelDirectory` `checkpoint` seen as a backbone's directory: its config.json without the entries of
    its task head (`HEAD_SETTINGS`: architecture, labels, CRF, BiLSTM, ...), so that a model loaded from it
    takes none of its head's settings (its head weights are the loader's to leave out)."""
    view = copy.copy(checkpoint)
    view.__dict__["config"] = {k: v for k, v in checkpoint.config.items() if k not in HEAD_SETTINGS}
    return view
