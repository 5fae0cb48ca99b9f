"""BertConfig: the hyperparameters of a BERT model, as in the original bert_config.json."""

import dataclasses
import json
import os

from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.model_files import find_config_file, read_json_object
from keras_bert_impl.utils.model_names import resolve_model_path

# Names of hidden activations this package implements (see keras_bert_impl/layers/activations.py).
# "gelu" is the exact erf form used by Hugging Face checkpoints; "gelu_new", "gelu_approximate" and
# "gelu_pytorch_tanh" are the tanh approximation that google-research/bert's modeling.py computes.
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_approximate", "gelu_pytorch_tanh", "relu", "tanh")

# Values of `BertConfig.attention_direction`: "bidirectional" is BERT's encoder (every token attends to
# every real token); "causal" lets position t attend to positions <= t only (the left-to-right LM of the
# paper's Table 5, transformers' `is_decoder=True`).
ATTENTION_DIRECTIONS = ("bidirectional", "causal")

# Pretraining objectives of the paper's Table 5 (`BertPretrainer(objective=...)`, the data readers'
# `objective_dataset`): masked LM + next sentence (BERT), the same on sentence-order labels, masked LM
# only ("No NSP"), left-to-right LM ("LTR & No NSP").
PRETRAINING_OBJECTIVES = ("mlm_nsp", "sop", "mlm", "ltr")

# (num_hidden_layers, hidden_size, num_attention_heads) of the sizes released by Google
# (the 24 small BERTs of Turc et al. 2019 and the two of the paper). Intermediate size is 4H.
_PRESETS = {
    "bert_tiny": (2, 128, 2),
    "bert_mini": (4, 256, 4),
    "bert_small": (4, 512, 8),
    "bert_medium": (8, 512, 8),
    "bert_base": (12, 768, 12),
    "bert_large": (24, 1024, 16),
}

@dataclasses.dataclass
class BertConfig:
    """Hyperparameters of a BERT model: the fields of the original `bert_config.json`.

    Reads Google's `bert_config.json` and Hugging Face's `config.json` alike (extra keys such as
    `model_type` or `transformers_version` are ignored; an architecture other than plain absolute-position
    BERT is refused). Every field is validated on construction; a bad value raises `ValueError` naming the
    field and what is allowed.

    Args:
        vocab_size: Size of the WordPiece vocabulary.
        hidden_size: Width H of every encoder layer.
        num_hidden_layers: Number L of Transformer encoder blocks.
        num_attention_heads: Number A of attention heads; must divide `hidden_size`.
        intermediate_size: Width of the feed-forward layer (4H in the released models).
        hidden_act: One of `SUPPORTED_ACTIVATIONS`. `"gelu"` is the exact erf GELU.
        hidden_dropout_prob: Dropout on embeddings and on every sub-layer output.
        attention_probs_dropout_prob: Dropout on the attention probabilities.
        max_position_embeddings: Longest sequence the model accepts.
        type_vocab_size: Number of segment (token type) ids.
        initializer_range: Standard deviation of the truncated-normal initializer.
        layer_norm_eps: Epsilon of every LayerNorm.
        attention_direction: `"bidirectional"` (BERT) or `"causal"`: position t attends only to positions
            <= t, as a left-to-right language model (the paper's "LTR & No NSP"). Hugging Face's
            `is_decoder: true` (without cross-attention) reads as `"causal"`, and `save_pretrained` writes
            it for a causal model, so transformers' `BertModel` loads it causal.

    Examples:

    >>> config = BertConfig.preset("bert_tiny")
    >>> config.hidden_size, config.intermediate_size
    (128, 512)
    >>> BertConfig.from_dict(config.to_dict()) == config
    True
    >>> hf_causal = {"vocab_size": 100, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
    ...              "is_decoder": True}
    >>> BertConfig.from_dict(hf_causal).attention_direction
    'causal'
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    attention_direction: str = "bidirectional"

    def __post_init__(self):
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer; got {value!r}.")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"BertConfig.{name} must be a probability in [0, 1); got {value!r}.")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive number; got {value!r}.")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act must be one of {', '.join(SUPPORTED_ACTIVATIONS)}; "
                f"got {self.hidden_act!r}."
            )
        if self.attention_direction not in ATTENTION_DIRECTIONS:
            raise ValueError(
                f"BertConfig.attention_direction must be one of {', '.join(ATTENTION_DIRECTIONS)}; "
                f"got {self.attention_direction!r}."
            )
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads}); allowed num_attention_heads for this size: "
                f"{[a for a in range(1, self.hidden_size + 1) if self.hidden_size % a == 0]}."
            )

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    # ------------------------------------------------------------------ constructors
    @classmethod
    def preset(cls, name, **overrides):
        """A released BERT size: one of `bert_tiny`, `bert_mini`, `bert_small`, `bert_medium`,
        `bert_base`, `bert_large` (vocab 30522, 512 positions, 2 segment types, intermediate 4H)."""
        if name not in _PRESETS:
            raise ValueError(f"Unknown BertConfig preset {name!r}; allowed presets: {', '.join(_PRESETS)}.")
        layers, hidden, heads = _PRESETS[name]
        fields = dict(
            num_hidden_layers=layers,
            hidden_size=hidden,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def preset_names(cls):
        return tuple(_PRESETS)

    @classmethod
    def from_dict(cls, values, source="config"):
        """Builds a config from a dict in Google's or Hugging Face's layout.

        Keys that are not BERT hyperparameters are ignored; keys that would change the architecture into
        something this package does not implement raise `ValueError`. `source` names the origin in errors.
        """
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object of BERT hyperparameters; got {type(values).__name__}.")
        if "class_name" in values and isinstance(values.get("config"), dict):
            raise ValueError(
                f"{source}: a Keras/keras-hub preset config (class_name {values['class_name']!r}), not a BERT "
                "config.json; load the preset directory with BertBackbone.from_pretrained(directory)."
            )
        _check_architecture(values, source)
        field_names = {f.name for f in dataclasses.fields(cls)}
        missing = [
            name
            for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
            if name not in values
        ]
        if missing:
            raise ValueError(f"{source}: missing required field(s) {', '.join(missing)}.")
        kwargs = {k: v for k, v in values.items() if k in field_names}
        if values.get("is_decoder") and "attention_direction" not in values:
            kwargs["attention_direction"] = "causal"  # transformers' causal BertModel
        elif values.get("is_decoder") and values["attention_direction"] != "causal":
            raise ValueError(
                f"{source}: is_decoder=true (causal attention) contradicts "
                f"attention_direction={values['attention_direction']!r}."
            )
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path):
        """Reads Google's `bert_config.json` or Hugging Face's `config.json`."""
        if not os.path.isfile(path):
            raise UserInputError(f"BERT config file not found: {path}")
        return cls.from_dict(read_json_object(path), source=path)

    @classmethod
    def from_pretrained(cls, path, **overrides):
        """Reads the config of a checkpoint directory (`config.json` or `bert_config.json`), a JSON file, or a
        model name (a Hugging Face hub name or keras-hub preset, `utils.model_names.resolve_model_path`).

        `overrides` replace fields after reading, e.g. `hidden_act="gelu_approximate"` to reproduce the
        tanh GELU that google-research/bert's TF1 code computes for `"gelu"`.
        """
        config = cls.from_json_file(find_config_file(resolve_model_path(path)))
        return dataclasses.replace(config, **overrides) if overrides else config

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json_string(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path):
        """Writes `to_json_string()` to `path`, atomically (a killed write leaves no partial file)."""
        with file_io.atomic_open(os.fspath(path), "w") as f:
            f.write(self.to_json_string())


def _check_architecture(values, source):
    """Refuses configs of models that are not plain BERT encoders."""
    model_type = values.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"{source}: unsupported architecture model_type={model_type!r}; only 'bert' is supported.")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{source}: unsupported position_embedding_type={position_type!r}; only 'absolute' is supported."
        )
    if values.get("add_cross_attention"):
        raise ValueError(
            f"{source}: cross-attention BERT configurations (add_cross_attention=true) are not supported; "
            "a causal BERT (is_decoder=true alone) is."
        )
