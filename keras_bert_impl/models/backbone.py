"""BertBackbone: the BERT encoder as a functional Keras model."""

import numbers
import warnings

import keras

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers import initializers
from keras_bert_impl.layers.attention import attention_bias_from_padding_mask, causal_attention_bias
from keras_bert_impl.layers.dense import BertDense
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.transformer_encoder import BertEncoderBlock
from keras_bert_impl.models.portable_export import PortableExport
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.errors import UserInputError, describe


@model_io.register_task(architectures=("BertModel",), pipeline="feature-extraction", serving="backbone",
                        backbone_source=True)
@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertBackbone(PortableExport, keras.Model):
    """The BERT encoder of Devlin et al. (2018): embeddings, L post-LN Transformer blocks, tanh pooler.

    A functional Keras model with no backend-specific code: it runs unchanged on TensorFlow, JAX and
    PyTorch.

    Inputs, a dict of int tensors of shape [batch, seq] (any seq <= `max_position_embeddings`):
        token_ids: WordPiece ids, laid out [CLS] A [SEP] (B [SEP]) [PAD]...
        segment_ids: 0 for segment A, 1 for segment B.
        padding_mask: 1 for real tokens, 0 for padding.

    Outputs, a dict:
        sequence_output: [batch, seq, H], the last encoder layer.
        pooled_output: [batch, H], tanh(Dense(sequence_output[:, 0])), the [CLS] summary.
        hidden_states (only with `output_hidden_states=True`): a list of L + 1 tensors [batch, seq, H], the
            embedding output first, then each encoder layer's output (the feature-based approach).

    With `config.attention_direction="causal"` position t attends to positions <= t only (and not to
    padding): a left-to-right model, whose [CLS] summary (`pooled_output`) then reads position 0 alone, as
    the paper's "LTR & No NSP" model is fine-tuned.

    Args:
        config: a `BertConfig` (or its dict).
        output_hidden_states: also return every layer's output.
        dtype: a dtype or `keras.DTypePolicy` for every layer, e.g. "mixed_bfloat16".

    Examples:

    >>> backbone = BertBackbone(BertConfig.preset("bert_tiny"))
    >>> inputs = {
    ...     "token_ids": keras.ops.array([[101, 7592, 102, 0]], dtype="int32"),
    ...     "segment_ids": keras.ops.zeros((1, 4), dtype="int32"),
    ...     "padding_mask": keras.ops.array([[1, 1, 1, 0]], dtype="int32"),
    ... }
    >>> outputs = backbone(inputs)
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 4, 128), (1, 128))

    Load a Hugging Face or Google checkpoint with `BertBackbone.from_pretrained(path)`.
    """

    def __init__(self, config, output_hidden_states=False, dtype=None, lora_rank=None, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        if not isinstance(config, BertConfig):
            raise TypeError(f"BertBackbone expects a BertConfig or its dict; got {type(config).__name__}.")

        # === Layers ===
        common = dict(
            dropout=config.hidden_dropout_prob,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range,
            dtype=dtype,
        )
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            name="embeddings",
            **common,
        )
        encoder_blocks = [
            BertEncoderBlock(
                hidden_size=config.hidden_size,
                num_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                attention_dropout=config.attention_probs_dropout_prob,
                name=f"transformer_layer_{i}",
                **common,
            )
            for i in range(config.num_hidden_layers)
        ]
        pooler = BertDense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=initializers.truncated_normal(config.initializer_range),
            dtype=dtype,
            name="pooler_dense",
        )

        # === Functional graph ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")

        causal = config.attention_direction == "causal"
        # The last block computes its [CLS] row and the other rows as two parts, which the graph then
        # concatenates. A model that reads only `pooled_output` (a user's sentence head) then skips the last
        # block's queries, attention output and feed-forward at every other position: compiled (XLA; a
        # tf.function) in the forward and backward pass, as `pooled_output()` does explicitly; eager
        # (torch) in the backward pass, which follows only what the loss reads.
        hidden_states, cls_row = _encode(embeddings, encoder_blocks, token_ids, segment_ids, padding_mask,
                                         last_layer="split", causal=causal)
        x = hidden_states[-1]  # [batch, seq, H]
        pooled = pooler(cls_row[:, 0, :])  # [batch, H]

        outputs = {"sequence_output": x, "pooled_output": pooled}
        if output_hidden_states:
            outputs["hidden_states"] = hidden_states
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
            outputs=outputs,
            **kwargs,
        )
        if dtype is not None:
            # keras.Model's functional constructor takes no dtype: set here, as keras-hub's Backbone does.
            self.dtype_policy = dtype

        # === Config ===
        self.config = config
        self.output_hidden_states = output_hidden_states
        self.embeddings = embeddings
        self.encoder_blocks = encoder_blocks
        self.pooler = pooler
        # Head weights (HF names) found in the checkpoint this backbone was loaded from; see from_pretrained.
        self.head_weights = {}
        # LoRA (`enable_lora`): keras-hub's attribute names, so that its save/load functions read this backbone.
        self._lora_rank = None
        self._lora_enabled_layers = []
        if lora_rank:
            self.enable_lora(lora_rank)

    def pooled_output(self, inputs):
        """`pooled_output` of `inputs`, computing the last encoder layer at the [CLS] position only.

        The [CLS] summary reads one row of the last layer, and that row needs the last layer's keys and
        values over the whole sequence but not its queries, attention output or feed-forward at the other
        positions. Skipping those (Model Garden's `output_range=1`) leaves the result unchanged and saves
        about (5/6) / L of the encoder's work, forward and backward: 21% for a 4-layer model, 7% for
        BERT-base. `BertClassifier` and `BertMultipleChoice` build their graphs with it.

        Call it on symbolic inputs to build a functional model that shares this backbone's layers (and so
        its weights), or on real tensors.

        Args:
            inputs: a dict {`token_ids`, `segment_ids`, `padding_mask`}, int [batch, seq].

        Returns:
            float [batch, H], equal to `self(inputs)["pooled_output"]`.
        """
        _, cls_row = _encode(
            self.embeddings, self.encoder_blocks, inputs["token_ids"], inputs["segment_ids"], inputs["padding_mask"],
            last_layer="cls", causal=self.config.attention_direction == "causal",
        )
        return self.pooler(cls_row[:, 0, :])

    def summary(self, *args, **kwargs):
        """`keras.Model.summary`, with each layer's output shape as this backbone's graph computes it.

        Keras prints the shape of a layer's latest call; once a task model wires the last encoder block
        again at [CLS] only (`pooled_output`), that would be [batch, 1, H]. Here the layers show their calls
        in this graph only, for the length of the summary.
        """
        with keras_compat.calls_in_graph_only(self):
            return super().summary(*args, **kwargs)

    # === LoRA, as keras-hub's Backbone ===
    def default_lora_layer_names(self):
        """The layers `enable_lora` adapts by default: keras-hub's names of the attention's query and value
        projections (this backbone's are "query" and "value")."""
        return ["query_dense", "value_dense", "query", "value"]

    def _layers_with_weights(self):
        return [layer for layer in keras_compat.flatten_layers(self, include_self=False) if layer.weights]

    @property
    def lora_rank(self):
        """The rank of the LoRA adapters `enable_lora` added, or None."""
        return self._lora_rank

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize` (e.g. `quantize("int8")`), without a warning per layer that has nothing to
        quantize (`quantize_quietly`)."""
        return quantize_quietly(super().quantize, mode, config=config, filters=filters, **kwargs)

    def enable_lora(self, rank, target_layer_names=None):
        """Freezes every weight of the backbone and adds trainable LoRA adapters of `rank` to the attention's
        query and value projections (keras-hub's `Backbone.enable_lora`): kernel W becomes W + (alpha / rank)
        A B with A [*W.shape[:-1], rank] and B [rank, W.shape[-1]] (Keras' `Dense.enable_lora`; B starts at 0,
        so the outputs are unchanged until a step trains them). The adapted layers' biases are frozen too
        (keras-hub leaves them trainable, and its adapters file does not hold them): the `.lora.h5` file then
        holds all that fine-tuning changes in the backbone. A task model's head stays trainable.

        Args:
            rank: the adapters' rank, an integer from 1 to the hidden size (a rank as large as the kernel's
                adds parameters and no constraint: LoRA's ranks are small, 4 to 64).
            target_layer_names: the names of the layers to adapt; None: `default_lora_layer_names()`.

        Raises:
            UserInputError: `rank` is not an integer from 1 to the hidden size.

        Examples:

        >>> backbone = BertBackbone(BertConfig.preset("bert_tiny"))
        >>> backbone.enable_lora(4)
        >>> len(backbone.trainable_weights)  # A and B of query and value in each of the 2 layers
        8
        >>> BertBackbone(BertConfig.preset("bert_tiny")).enable_lora(1000)
        Traceback (most recent call last):
        keras_bert_impl.utils.errors.UserInputError: rank 1000 (an int) is more than the hidden size 128: expected a LoRA rank from 1 to 128.
        """
        hidden_size = self.config.hidden_size
        integer = isinstance(rank, numbers.Integral) and not isinstance(rank, bool)
        if not integer or not 1 <= rank <= hidden_size:
            what = f"more than the hidden size {hidden_size}" if integer and rank > 0 else "not a positive integer"
            raise UserInputError(f"rank {describe(rank)} is {what}: expected a LoRA rank from 1 to {hidden_size}.")
        if self._lora_enabled_layers:
            raise ValueError(f"LoRA is enabled already (rank {self._lora_rank}).")
        names = set(self.default_lora_layer_names() if target_layer_names is None else target_layer_names)
        self.trainable = True
        for layer in keras_compat.flatten_layers(self, include_self=False):
            layer.trainable = False
        for index, layer in enumerate(self._layers_with_weights()):
            if layer.name in names and hasattr(layer, "enable_lora"):
                layer.trainable = True
                layer.enable_lora(rank)
                if layer.bias is not None:
                    layer.bias.trainable = False
                self._lora_enabled_layers.append(index)
        self._lora_rank = int(rank)

    def save_lora_weights(self, filepath):
        """Writes the LoRA adapters to `filepath` (`*.lora.h5`) in keras-hub's layout
        (`keras_bert_impl.checkpoints.lora_file`)."""
        if not self._lora_enabled_layers:
            raise ValueError("There are no LoRA-enabled layers in this backbone: call `enable_lora(rank)` first.")
        layers = self._layers_with_weights()
        model_io.write_lora_file(filepath, self._lora_rank, {
            index: (keras.ops.convert_to_numpy(layers[index].lora_kernel_a),
                    keras.ops.convert_to_numpy(layers[index].lora_kernel_b))
            for index in self._lora_enabled_layers})

    def load_lora_weights(self, filepath):
        """Assigns the LoRA adapters of `filepath` (written by `save_lora_weights` or keras-hub's), enabling
        LoRA at the file's rank first if it is not enabled; a rank or layer that differs raises ValueError."""
        rank, kernels = model_io.read_lora_file(filepath)
        if not self._lora_enabled_layers:
            self.enable_lora(rank)
        elif self._lora_rank != rank:
            raise ValueError(f"{filepath} holds LoRA adapters of rank {rank}; this backbone's are rank "
                             f"{self._lora_rank} (enable_lora).")
        if sorted(kernels) != sorted(self._lora_enabled_layers):
            raise ValueError(f"{filepath} adapts the layers {sorted(kernels)} (indices among the layers with "
                             f"weights); this backbone adapts {sorted(self._lora_enabled_layers)}.")
        layers = self._layers_with_weights()
        for index, (kernel_a, kernel_b) in kernels.items():
            layers[index].lora_kernel_a.assign(kernel_a)
            layers[index].lora_kernel_b.assign(kernel_b)

    @property
    def token_embedding(self):
        """The word-embedding layer (its matrix is tied to the masked-LM output layer)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "config": self.config.to_dict(),
            "output_hidden_states": self.output_hidden_states,
            "dtype": serialize_dtype_policy(self, self.dtype_policy),
            "lora_rank": self._lora_rank,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_pretrained(cls, path, output_hidden_states=False, dtype=None, require_pooler=True, **config_overrides):
        """Loads a checkpoint: a Hugging Face BERT directory, a Google TF1 checkpoint, or our own save.

        Args:
            path: a directory holding `config.json` + `model.safetensors`/`pytorch_model.bin`
                (Hugging Face; keys with or without the `bert.` prefix), or `bert_config.json` +
                `bert_model.ckpt.*` (Google), or the checkpoint prefix of a Google checkpoint, or a
                keras-hub BertBackbone preset directory (config `hidden_act="gelu_approximate"`, keras-hub's GELU).
            output_hidden_states: also return every layer's output.
            dtype: dtype policy for every layer; None: the policy `save_pretrained` wrote to config.json
                (`keras_dtype_policy`), else Keras' global policy.
            require_pooler: False accepts a checkpoint without pooler weights (transformers'
                BertForQuestionAnswering / BertForTokenClassification save none); the pooler keeps its
                initialization.
            **config_overrides: fields replacing those of the stored config, e.g. dropout rates.

        Weights of pretraining and task heads found in the checkpoint (masked-LM transform and bias, NSP,
        classifier, QA outputs) are kept, under their Hugging Face names, in `backbone.head_weights`.
        """
        checkpoint, config, backbone_weights, head_weights = model_io.read_backbone(path, **config_overrides)
        if dtype is None:
            dtype = checkpoint.dtype_policy
        # Every weight is assigned next, so the build skips the initial draws (layers/initializers.py).
        with initializers.skip_initial_draws():
            backbone = cls(config, output_hidden_states=output_hidden_states, dtype=dtype)
        model_io.assign_backbone(backbone, backbone_weights, source=checkpoint.path, require_pooler=require_pooler)
        if "pooler.dense.weight" not in backbone_weights:  # require_pooler=False: the pooler keeps its initialization
            initializers.draw_initial_kernel(backbone.pooler)
        backbone.head_weights = head_weights
        return backbone

    def save_pretrained(self, directory):
        """Writes `config.json` + `model.safetensors` in Hugging Face's layout (a BertModel directory).

        With LoRA enabled, the adapters are merged: each adapted kernel is written as W + (alpha / rank) A B,
        so the directory is a plain BERT checkpoint with the LoRA model's outputs (keep the adapters alone
        with `save_lora_weights`).

        The directory loads back with `from_pretrained` here and with transformers' `BertModel`. A dtype
        policy other than float32 is written to config.json as `keras_dtype_policy` (transformers ignores
        the field), which `from_pretrained` applies when it is given no `dtype`. The task models save their
        heads with their own `save_pretrained`.
        """
        model_io.save_model(self, directory)

    def save_to_preset(self, directory, tokenizer=None, allow_gelu_approximation=False):
        """Writes a keras-hub preset that `keras_hub.models.BertBackbone.from_preset(directory)` loads.

        Needs keras-hub (it writes the preset). keras-hub's BertBackbone computes the tanh GELU, so a
        model with `hidden_act="gelu"` (exact) is refused unless `allow_gelu_approximation=True`; see
        `keras_bert_impl.checkpoints.keras_hub_preset.write_preset`. `from_pretrained(directory)` reads
        the preset back.

        Args:
            directory: the preset directory.
            tokenizer: a `BertTokenizer` written as the preset's keras-hub BertTokenizer, or None.
            allow_gelu_approximation: write an exact-GELU model, whose keras-hub outputs then differ slightly.
        """
        model_io.save_keras_hub_preset(self, directory, tokenizer=tokenizer,
                                       allow_gelu_approximation=allow_gelu_approximation)


def quantize_quietly(quantize, mode, **kwargs):
    """Calls `quantize(mode, **kwargs)` (a model's `keras.Model.quantize`) without Keras' warning "Layer X does
    not have a `quantize` method implemented" for each layer with nothing to quantize (LayerNormalization,
    dropout, the inputs): those layers stay as they are by design. Other warnings pass."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Layer \S+ does not have a `quantize` method implemented")
        return quantize(mode, **kwargs)


def base_dtype_policy(policy):
    """`policy` itself, or the default policy of a `keras.dtype_policies.DTypePolicyMap`."""
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
        return policy.default_policy
    return policy


def serialize_dtype_policy(model, policy):
    """`policy` serialized; with quantized layers in `model`, a `DTypePolicyMap` of their policies by path.

    A model built from a config with such a map (as keras-hub's backbones are) passes the map to every
    layer, and each layer takes its policy by its path, so the quantized layers are built quantized
    and their saved int8 (or other) variables load into them.
    """
    base = base_dtype_policy(policy)
    quantized = {}
    for layer in keras_compat.flatten_layers(model, include_self=False):
        if layer.quantization_mode is not None:
            own = layer.dtype_policy  # a layer built from a map holds the map: its policy is the map's at its path
            quantized[layer.path] = own[layer.path] if isinstance(own, keras.dtype_policies.DTypePolicyMap) else own
    if quantized:
        policy = keras.dtype_policies.DTypePolicyMap(default_policy=base, policy_map=quantized)
    else:
        policy = base
    return keras.dtype_policies.serialize(policy)


def _encode(embeddings, encoder_blocks, token_ids, segment_ids, padding_mask, last_layer, causal=False):
    """The embedding output and each encoder block's output, [batch, seq, H] each, and the last block's
    [CLS] row [batch, 1, H]. `causal`: position t attends to positions <= t only.

    `last_layer` says how the last block runs: "split" (its [CLS] row and the other rows as two parts,
    concatenated: a graph compiler drops the part nobody reads, a backward pass the part the loss does not
    read) or "cls" (the [CLS] row only; the last hidden state is then [batch, 1, H])."""
    x = embeddings(token_ids, segment_ids)  # [batch, seq, H]
    if causal:
        attention_bias = causal_attention_bias(padding_mask)  # [batch, 1, seq, seq]
    else:
        attention_bias = attention_bias_from_padding_mask(padding_mask)  # [batch, 1, 1, seq]
    hidden_states = [x]
    for block in encoder_blocks[:-1]:
        x = block(x, attention_bias)  # [batch, seq, H]
        hidden_states.append(x)
    last = encoder_blocks[-1]
    if last_layer == "split":
        cls_row, other_rows = last(x, attention_bias, split_at=1)  # [batch, 1, H], [batch, seq - 1, H]
        x = keras.ops.concatenate([cls_row, other_rows], axis=1)  # [batch, seq, H]
    elif last_layer == "cls":
        x = cls_row = last(x, attention_bias, output_range=1)  # [batch, 1, H]
    else:
        raise ValueError(f"last_layer={last_layer!r}: expected 'split' or 'cls'.")
    hidden_states.append(x)
    return hidden_states, cls_row
