"""The models' one door to checkpoints: load and save a model's weights and directory.

`keras_bert_impl.models` imports nothing else of `keras_bert_impl.checkpoints` (tests/test_architecture.py
checks it): a model class registers itself with `register_task` (`task_registry`), builds its heads' weight
rows with the builders of `head_weights` (`classifier_table`, `span_table`, ...), reads a checkpoint with
`read_backbone` and `load_heads`, writes a directory with `save_model`, a keras-hub preset with
`save_keras_hub_preset`, LoRA adapters with `write_lora_file` / `read_lora_file`; where the files are and what
they hold is `model_directory.ModelDirectory`'s.
"""

from keras_bert_impl.checkpoints import keras_hub_preset, model_directory, task_registry
from keras_bert_impl.checkpoints.head_weights import (  # noqa: F401 (the row builders: for the models)
    CRF_TRANSITIONS_NAME,
    assign_head_weights,
    bilstm_table,
    classifier_table,
    crf_table,
    head_weights_dict,
    masked_lm_table,
    next_sentence_table,
    scalar_mix_table,
    span_table,
)
from keras_bert_impl.checkpoints.lora_file import read_lora_file, write_lora_file  # noqa: F401 (for the backbone)
from keras_bert_impl.checkpoints.model_directory import ModelDirectory, label_entries  # noqa: F401
from keras_bert_impl.checkpoints.sentence_transformers_files import (  # noqa: F401 (for the sentence encoder)
    SentenceModules,
    write_sentence_modules,
)
from keras_bert_impl.checkpoints.task_registry import entry_of, register_task  # noqa: F401 (for the models)
from keras_bert_impl.checkpoints.weight_tables import (  # noqa: F401 (dense_entries: for the models' heads)
    assign_backbone_weights,
    backbone_weights_dict,
    dense_entries,
    split_head_weights,
)
from keras_bert_impl.utils import keras_compat


def open_checkpoint(path):
    """The `ModelDirectory` of `path` (its config, settings, labels, tokenizer files, weights)."""
    return path if isinstance(path, ModelDirectory) else ModelDirectory(path)


def open_task_checkpoint(path, cls, ignore_stored_head=False):
    """The `ModelDirectory` a `cls` task model loads from `path`: refused when it holds another task's model
    (`task_registry.check_loads_as`), unless `ignore_stored_head`, which gives the directory without its head's
    settings (`task_registry.backbone_only`)."""
    checkpoint = open_checkpoint(path)
    if ignore_stored_head:
        return task_registry.backbone_only(checkpoint)
    task_registry.check_loads_as(checkpoint, cls)
    return checkpoint


def read_backbone(path, **config_overrides):
    """What a backbone is built from: `(checkpoint, BertConfig, backbone weights, head weights)`.

    Args:
        path: a checkpoint (`ModelDirectory`'s layouts) or its `ModelDirectory`.
        **config_overrides: fields replacing those of the stored config.
    """
    checkpoint = open_checkpoint(path)
    config = checkpoint.bert_config(**config_overrides)
    backbone_weights, head_weights = split_head_weights(checkpoint.read_weights())
    return checkpoint, config, backbone_weights, head_weights


def assign_backbone(backbone, weights, source, require_pooler=True):
    """Assigns the canonical backbone weights to a built `BertBackbone` (`weight_tables.assign_backbone_weights`)."""
    assign_backbone_weights(backbone, weights, source=str(source), require_pooler=require_pooler)


def _head_tables(model):
    """{head name: weight rows} of a model's heads (its `head_tables()`; a backbone has none)."""
    tables = getattr(model, "head_tables", None)
    return tables() if tables is not None else {}


def head_names(model):
    """The names of a model's heads, as its `head_tables()` names them (e.g. ["classifier", "CRF"])."""
    return list(_head_tables(model))


def load_heads(model, weights, source):
    """Assigns every head of `model` found in `weights` (Hugging Face names); returns the names of the heads
    absent from `weights`, which keep their initialization. Raises `UserInputError` on a partial head or a
    shape mismatch (naming the weight and both shapes)."""
    return [head for head, table in _head_tables(model).items() if not assign_head_weights(table, weights, str(source))]


def head_weights(model):
    """The weights of a model's heads under Hugging Face names, in Hugging Face layout (float32 numpy)."""
    weights = {}
    for table in _head_tables(model).values():
        weights.update(head_weights_dict(table))
    return weights


def check_savable(model, directory):
    """Refuses to write a Hugging Face directory of a model whose class is not registered (`TypeError`) or which
    has quantized layers (`ValueError`: the directory holds float weights)."""
    task_registry.entry_of(model)
    quantized = [layer.path for layer in keras_compat.flatten_layers(model, include_self=False)
                 if layer.quantization_mode]
    if quantized:
        raise ValueError(
            f"{directory}: a Hugging Face directory holds float weights, and {len(quantized)} layers of this model are "
            f"quantized (e.g. {quantized[0]}); save it with model.save('model.keras'), or save_pretrained before "
            "quantize()."
        )


def save_model(model, directory, architecture=None, settings=None, tokenizer=None, sequence_length=None,
               extra_files=None, files=None):
    """Writes `model` (a `BertBackbone` or a task model) as a Hugging Face directory
    (`model_directory.write_model_directory`): config.json (the backbone's config, `architecture`, default the
    first of its class's registered architectures, and the `settings` entries), model.safetensors (backbone and
    heads), the `tokenizer`'s files (with `sequence_length`), the `extra_files` and the files of a layout of
    its own (`files`: None, or a function of the directory, e.g. a sentence encoder's sentence-transformers
    modules, written before the weights).

    Raises:
        TypeError: the model's class is not registered.
        ValueError: the model has quantized layers (a Hugging Face directory holds float weights).
    """
    check_savable(model, directory)
    backbone = getattr(model, "backbone", model)
    weights = dict(backbone_weights_dict(backbone), **head_weights(model))
    policy = backbone.dtype_policy
    policy = getattr(policy, "default_policy", policy)  # a DTypePolicyMap's default policy
    model_directory.write_model_directory(
        directory, backbone.config, weights, architecture=architecture or task_registry.entry_of(model).architectures[0],
        settings=settings, dtype_policy=policy.name, tokenizer=tokenizer, sequence_length=sequence_length,
        extra_files=extra_files, files=files,
    )


def save_keras_hub_preset(model, directory, tokenizer=None, classifier=None, allow_gelu_approximation=False):
    """Writes a keras-hub preset of `model`'s backbone (and, with `classifier=(num_classes, dropout)`, its
    classifier head) through keras-hub (`keras_hub_preset.write_preset`)."""
    backbone = getattr(model, "backbone", model)
    weights = dict(backbone_weights_dict(backbone), **(head_weights(model) if classifier else {}))
    keras_hub_preset.write_preset(directory, backbone.config, weights, tokenizer=tokenizer, classifier=classifier,
                                  allow_gelu_approximation=allow_gelu_approximation)


def model_class(path):
    """The registered model class of the checkpoint at `path` (`task_registry.stored_entry`)."""
    return task_registry.stored_entry(open_checkpoint(path)).model_class
