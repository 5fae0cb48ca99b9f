"""The models' one door to checkpoints: load and save a model's weights and directory.

`keras_bert_impl.models` imports nothing else of `keras_bert_impl.checkpoints` (tests/test_architecture.py
checks it): a model's `from_pretrained` reads a checkpoint with `read_backbone` and `load_heads`,
`save_pretrained` writes with `save_model`, `save_to_preset` with `save_keras_hub_preset`, LoRA adapters
with `write_lora_file` / `read_lora_file`; where the files
are and what they hold is `model_directory.ModelDirectory`'s, how each class is stored `task_layouts`'.
"""

from keras_bert_impl.checkpoints import keras_hub_preset, model_directory, task_layouts
from keras_bert_impl.checkpoints.head_weights import (  # noqa: F401 (CRF_TRANSITIONS_NAME: for the models)
    CRF_TRANSITIONS_NAME,
    assign_head_weights,
    head_weights_dict,
)
from keras_bert_impl.checkpoints.lora_file import read_lora_file, write_lora_file  # noqa: F401 (for the backbone)
from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.checkpoints.task_layouts import (  # noqa: F401 (the names the models and pipelines use)
    BACKBONE_CLASSES,
    FEATURE_TAGGER_KEY,
    FEATURE_TAGGER_PREFIX,
    FEATURE_TAGGER_SETTINGS,
    OBJECTIVE_KEY,
    register_model,
)
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.checkpoints.weight_tables import (
    assign_backbone_weights,
    backbone_weights_dict,
    split_head_weights,
)


def open_checkpoint(path):
    """The `ModelDirectory` of `path` (its config, settings, labels, tokenizer files, weights)."""
    return path if isinstance(path, ModelDirectory) else ModelDirectory(path)


def open_task_checkpoint(path, cls, ignore_stored_head=False):
    """The `ModelDirectory` a `cls` task model loads from `path`: refused when it holds another task's model
    (`task_layouts.check_loads_as`), unless `ignore_stored_head`, which gives the directory without its head's
    settings (`task_layouts.backbone_only`)."""
    checkpoint = open_checkpoint(path)
    if ignore_stored_head:
        return task_layouts.backbone_only(checkpoint)
    task_layouts.check_loads_as(checkpoint, cls)
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


def head_names(model):
    """The names of a model's heads, as its layout stores them (e.g. ["classifier", "CRF"])."""
    return list(task_layouts.layout_of(model).heads(model))


def load_heads(model, weights, source):
    """Assigns every head of `model` found in `weights` (Hugging Face names); returns the names of the heads
    absent from `weights`, which keep their initialization. Raises `UserInputError` on a partial head or a
    shape mismatch (naming the weight and both shapes)."""
    tables = task_layouts.layout_of(model).heads(model)
    return [head for head, table in tables.items() if not assign_head_weights(table, weights, str(source))]


def head_weights(model):
    """The weights of a model's heads under Hugging Face names, in Hugging Face layout (float32 numpy)."""
    weights = {}
    for table in task_layouts.layout_of(model).heads(model).values():
        weights.update(head_weights_dict(table))
    return weights


def check_savable(model, directory):
    """Refuses to write a Hugging Face directory of a model whose class has no layout (`TypeError`) or which
    has quantized layers (`ValueError`: the directory holds float weights)."""
    task_layouts.layout_of(model)
    quantized = [layer.path for layer in keras_compat.flatten_layers(model, include_self=False)
                 if layer.quantization_mode]
    if quantized:
        raise ValueError(
            f"{directory}: a Hugging Face directory holds float weights, and {len(quantized)} layers of this model are "
            f"quantized (e.g. {quantized[0]}); save it with model.save('model.keras'), or save_pretrained before "
            "quantize()."
        )


def save_model(model, directory, label_names=None, settings=None):
    """Writes `model` (a `BertBackbone` or a task model) as a Hugging Face directory: config.json (the
    backbone's config, the architecture, the labels and task settings of its layout, `settings`) and
    model.safetensors (backbone and heads), and the files its layout keeps beside them (a sentence encoder's
    sentence-transformers modules); see `model_directory.write_weights_and_config`.

    Raises:
        TypeError: the model's class has no Hugging Face layout.
        ValueError: the model has quantized layers (a Hugging Face directory holds float weights).
    """
    check_savable(model, directory)
    layout = task_layouts.layout_of(model)
    backbone = getattr(model, "backbone", model)
    weights = dict(backbone_weights_dict(backbone), **head_weights(model))
    policy = backbone.dtype_policy
    policy = getattr(policy, "default_policy", policy)  # a DTypePolicyMap's default policy
    model_directory.write_weights_and_config(
        directory, backbone.config, weights, architecture=layout.architecture_of(model),
        settings=dict(layout.settings(model, label_names), **(settings or {})), dtype_policy=policy.name,
        files=None if layout.files is None else lambda target: layout.files(model, target),
    )


def save_keras_hub_preset(model, directory, tokenizer=None, classifier=None, allow_gelu_approximation=False):
    """Writes a keras-hub preset of `model`'s backbone (and, with `classifier=(num_classes, dropout)`, its
    classifier head) through keras-hub (`keras_hub_preset.write_preset`)."""
    backbone = getattr(model, "backbone", model)
    weights = dict(backbone_weights_dict(backbone), **(head_weights(model) if classifier else {}))
    keras_hub_preset.write_preset(directory, backbone.config, weights, tokenizer=tokenizer, classifier=classifier,
                                  allow_gelu_approximation=allow_gelu_approximation)


def model_class(path):
    """The registered model class of the checkpoint at `path` (from its `architectures`)."""
    return task_layouts.model_class(open_checkpoint(path))

