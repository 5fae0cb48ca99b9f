"""BertTaskModel: what every task model on a BertBackbone shares: raw text in, compile defaults, head weights,
saving and loading."""

import contextlib
import inspect
import sys
import warnings

import keras
import numpy as np

from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.initializers import truncated_normal
from keras_bert_impl.models.backbone import BertBackbone, quantize_quietly, serialize_dtype_policy
from keras_bert_impl.models.portable_export import PortableExport
from keras_bert_impl.preprocessors import input_checks
from keras_bert_impl.utils import keras_compat


class BertTaskModel(keras_compat.ElementSpecSymbolicBuild, PortableExport, keras.Model):
    """Base class of the task models (pretrainer, classifier, span QA, ...): a functional model built on a
    `BertBackbone`, whose config is the serialized backbone plus the task's own arguments.

    A subclass (docs/adding_a_task.md) builds its layers and functional graph in `__init__`, calls
    `super().__init__(inputs=..., outputs=...)`, sets `self.backbone`, lists its other constructor
    arguments in `task_config()` and names the class of its preprocessor in `preprocessor_class`. For its
    model directories it lists its heads' weight rows (`head_tables()`) and what config.json records of its
    arguments (`stored_settings`), and registers itself with its names (`model_io.register_task`: Hugging Face
    architectures, pipeline, serving kind); `from_pretrained` and `save_pretrained` are this class's.

    With a `preprocessor` (a constructor argument of every task model; `from_pretrained(dir)` loads one
    from the directory's vocabulary), `fit`, `evaluate`, `predict` and the `*_on_batch` methods take raw
    text, and `tf.data` datasets of raw text, as the preprocessor's docstring describes; token-id inputs
    (the backbone's dict) work as without one. `.keras` files and `save_pretrained` keep the preprocessor.
    `export(path, format="litert" | "onnx")` writes the package's exports (`PortableExport`).
    """

    # The `BertPreprocessor` subclass that turns this task's raw text into its inputs.
    preprocessor_class = None
    # False for a head that does not read the backbone's `pooled_output` (token tagging, span QA, pooled
    # sentence embeddings): this model then trains without the pooler (`fixed_backbone_layers`).
    reads_pooled_output = True

    def __init__(self, *args, preprocessor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.preprocessor = preprocessor

    @property
    def preprocessor(self):
        """The `BertPreprocessor` that turns raw text into this model's inputs, or None."""
        return self._preprocessor

    @preprocessor.setter
    def preprocessor(self, preprocessor):
        if preprocessor is not None:
            if not isinstance(preprocessor, self.preprocessor_class or ()):
                raise TypeError(f"{type(self).__name__} takes a {self.preprocessor_class.__name__} as preprocessor, "
                                f"got {type(preprocessor).__name__}.")
            if preprocessor.tokenizer.vocab is not None:  # else it comes from a .keras file's assets
                preprocessor.check_vocabulary(self._vocab_size(), "the backbone's config")
        self._preprocessor = preprocessor

    def _vocab_size(self):
        """Rows of the token embedding table (found among the layers: `backbone` is set after building)."""
        return next(layer.vocab_size for layer in keras_compat.flatten_layers(self) if isinstance(layer, BertEmbeddings))

    def task_config(self):
        """The subclass's constructor arguments other than the backbone and the preprocessor."""
        return {}

    # ------------------------------------------------------------------------------ trained variables
    def fixed_backbone_layers(self):
        """The backbone's layers this model leaves out of training: the pooler when the head does not read
        `pooled_output` (`reads_pooled_output = False`), so that no optimizer looks for its gradients.

        They are fixed for this model only: its `trainable_variables` leave them out and its
        `non_trainable_variables` hold them, while their `trainable` flags stay as they are, so that
        another model built on the same backbone object trains them. Their weights are kept and saved.
        """
        backbone = getattr(self, "backbone", None)  # set after the functional graph is built
        if backbone is None or self.reads_pooled_output:
            return []
        return [backbone.pooler]

    def _fixed_variable_ids(self):
        return {id(v) for layer in self.fixed_backbone_layers() for v in layer.variables}

    def _split_fixed(self, trainable, non_trainable):
        fixed = self._fixed_variable_ids()
        if not fixed:
            return trainable, non_trainable
        return [v for v in trainable if id(v) not in fixed], non_trainable + [v for v in trainable if id(v) in fixed]

    @property
    def trainable_variables(self):
        return self._split_fixed(super().trainable_variables, [])[0]

    @property
    def non_trainable_variables(self):
        return self._split_fixed(super().trainable_variables, super().non_trainable_variables)[1]

    @property
    def trainable_weights(self):
        return self._split_fixed(super().trainable_weights, [])[0]

    @property
    def non_trainable_weights(self):
        return self._split_fixed(super().trainable_weights, super().non_trainable_weights)[1]

    # ------------------------------------------------------------------------------ .keras assets
    def save_assets(self, dir_path):
        """Keras' saving hook: the preprocessor's vocabulary goes to the `.keras` file's assets (vocab.txt),
        not into its config."""
        if self.preprocessor is not None:
            self.preprocessor.save_vocabulary(dir_path)

    def load_assets(self, dir_path):
        """Keras' loading hook: the preprocessor rebuilt from the config reads its vocabulary from the assets."""
        if self.preprocessor is not None:
            self.preprocessor.load_vocabulary(dir_path)
            self.preprocessor.check_vocabulary(self._vocab_size(), "the backbone's config")

    # ------------------------------------------------------------------------------ raw text
    def _preprocess(self, x, y=None, sample_weight=None, needs_labels=False):
        """`(x, y, sample_weight)` through the preprocessor when `x` is raw text (or a dataset of it), `x` and `y`
        checked first (`preprocessors.input_checks`; the task's rules: `check_labels`, `check_inputs`)."""
        if sys.modules.get("tensorflow") is not None:  # a tf.data.Dataset exists only once TensorFlow is imported
            import tensorflow as tf

            if isinstance(x, tf.data.Dataset):
                from keras_bert_impl.preprocessors import tf_dataset_preprocessing

                if not tf_dataset_preprocessing.holds_text(x):
                    return x, y, sample_weight
                return tf_dataset_preprocessing.preprocess_dataset(self._text_preprocessor(), x), y, sample_weight
        if x is not None and not isinstance(x, (dict, list, tuple, str, bytes, np.ndarray)):
            return x, y, sample_weight  # a PyDataset, a generator or a tensor: to Keras as it comes
        input_checks.check_given(x)
        raw = input_checks.is_text_input(x)
        if raw:
            self._text_preprocessor()
            if needs_labels and y is None:
                raise ValueError(f"{type(self).__name__}: training on raw text needs its labels y "
                                 f"(see {self.preprocessor_class.__name__}).")
        if y is not None:
            y = self.check_labels(y)
        if raw:
            x, y, sample_weight = self._text_preprocessor()(x, y, sample_weight)
        if isinstance(x, dict) and "token_ids" in x:
            self.check_inputs(x, y)
        return x, y, sample_weight

    def check_labels(self, y):
        """`y` as the task takes it, checked element by element (`preprocessors.input_checks`), or a
        `UserInputError` naming the first element that is not a valid label; `y` in the form given (raw text's
        labels, or those of token ids). The base class checks nothing."""
        return y

    def check_inputs(self, x, y):
        """Checks the token-id dict `x` (raw text already preprocessed) against the model and the labels `y`
        (e.g. the number of choices, one label per example); raises `UserInputError`. The base class checks
        nothing."""

    def _text_preprocessor(self):
        if self.preprocessor is None:
            raise ValueError(
                f"{type(self).__name__} got raw text but has no preprocessor: build it with preprocessor="
                f"{self.preprocessor_class.__name__}(tokenizer, sequence_length), or load it with from_pretrained "
                "from a directory holding vocab.txt; or pass token ids (the backbone's input dict)."
            )
        return self.preprocessor

    def _preprocess_validation(self, validation_data):
        if isinstance(validation_data, tuple) and len(validation_data) in (2, 3):
            x, y, weights = (*validation_data, None)[:3]
            x, y, weights = self._preprocess(x, y, weights, needs_labels=True)
            return (x, y) if weights is None else (x, y, weights)
        return self._preprocess(validation_data)[0]

    def _build_optimizer(self):
        """Creates the optimizer's variables before the first step: Keras' TensorFlow trainer without a strategy
        creates them inside the train step's first trace, which TensorFlow then traces again."""
        if getattr(self, "optimizer", None) is not None and not self.optimizer.built and self.built:
            strategy = getattr(self, "distribute_strategy", None)  # the TensorFlow trainer's
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                self.optimizer.build(self.trainable_variables)

    def fit(self, x=None, y=None, *args, **kwargs):
        x, y, kwargs["sample_weight"] = self._preprocess(x, y, kwargs.get("sample_weight"), needs_labels=True)
        if kwargs.get("validation_data") is not None:
            kwargs["validation_data"] = self._preprocess_validation(kwargs["validation_data"])
        self._build_optimizer()
        return super().fit(x, y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        x, y, kwargs["sample_weight"] = self._preprocess(x, y, kwargs.get("sample_weight"), needs_labels=True)
        return super().evaluate(x, y, *args, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", *args, **kwargs):
        """`keras.Model.predict` (raw text goes through the preprocessor); inputs that fit in one batch (at most
        `batch_size`, default 32, rows of arrays or tensors) are computed as `predict_on_batch` does, by the
        same compiled step without the per-call input pipeline `predict` builds (on TensorFlow a `tf.data`
        pipeline: most of a batch-1 call's time, docs/performance.md "Serving latency")."""
        x = self._preprocess(x)[0]
        if not args and not kwargs and _rows_of_one_batch(x, batch_size or 32):
            return super().predict_on_batch(x)
        return super().predict(x, batch_size, verbose, *args, **kwargs)

    def train_on_batch(self, x, y=None, sample_weight=None, *args, **kwargs):
        x, y, sample_weight = self._preprocess(x, y, sample_weight, needs_labels=True)
        self._build_optimizer()
        return super().train_on_batch(x, y, sample_weight, *args, **kwargs)

    def test_on_batch(self, x, y=None, sample_weight=None, *args, **kwargs):
        x, y, sample_weight = self._preprocess(x, y, sample_weight, needs_labels=True)
        return super().test_on_batch(x, y, sample_weight, *args, **kwargs)

    def predict_on_batch(self, x):
        return super().predict_on_batch(self._preprocess(x)[0])

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize` (e.g. `quantize("int8")`), without a warning per layer that has nothing to
        quantize (`backbone.quantize_quietly`)."""
        return quantize_quietly(super().quantize, mode, config=config, filters=filters, **kwargs)

    # ------------------------------------------------------------------------------ model directories
    # What the class's directories record of its constructor arguments (`models.stored_settings`), in the order
    # `from_pretrained` resolves them.
    stored_settings = ()
    # `BertBackbone.from_pretrained` arguments of the class's backbone (e.g. require_pooler=False).
    backbone_arguments = {}
    # Former names of constructor arguments that `from_pretrained` still takes, with a DeprecationWarning.
    renamed_arguments = {}

    @classmethod
    def head_arguments(cls):
        """The constructor's arguments after `backbone` (the head's), in order: what `from_pretrained` takes
        positionally after the path."""
        parameters = list(inspect.signature(cls.__init__).parameters.values())[2:]  # self, backbone
        return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    @classmethod
    def from_pretrained(cls, path, *args, dtype=None, preprocessor="auto", ignore_stored_head=False, **kwargs):
        """The model of a checkpoint: its backbone, and its head with its trained weights when the checkpoint has
        one of this class (or a backbone's or pretraining model's heads: those it has).

        Reads Hugging Face directories (this class's `BertFor*` architecture, or BertModel, keys with or without
        `bert.`), Google TF1 checkpoints (their heads' `output_weights` / `cls/...` variables), keras-hub presets,
        and the directories `save_pretrained` writes (see `BertBackbone.from_pretrained`). The head's arguments
        (e.g. `num_classes`, `use_crf`, `bilstm_units`) default to what the directory records
        (`stored_settings`: config.json's entries, the shapes of the head's weights), else to the constructor's
        defaults; a given one the stored head cannot take raises `UserInputError`. A head the checkpoint lacks
        keeps its random initialization, with a warning (`newly_initialized_heads`).

        Args:
            path: a checkpoint directory, a Google checkpoint prefix, a model name, or its `ModelDirectory`.
            *args: the head's arguments by position (`head_arguments()`, e.g. `num_classes`).
            dtype: dtype policy for every layer; None: the policy the directory records, else Keras' global one.
            preprocessor: "auto": the directory's vocabulary (and the sequence length and task settings it
                records) as the model's preprocessor when it holds one (else none); or a preprocessor, or None.
            ignore_stored_head: load the backbone alone and start a new head, also from another task's directory
                (which is refused otherwise): the model gets none of the stored head's weights or settings.
            **kwargs: the head's arguments by name, then backbone config fields to replace (e.g.
                `hidden_dropout_prob=0.0`).

        Raises:
            UserInputError: a directory of another task's model, a head argument the stored head cannot take, a
                head argument needed and not recorded (e.g. `num_classes` without a stored head).
            ValueError: a stored head of another shape than the arguments give.
        """
        names = cls.head_arguments()
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}.from_pretrained takes the path and at most {len(names)} head arguments "
                            f"by position ({', '.join(names)}); got {len(args)}.")
        given = dict(zip(names, args))
        for name in names:
            if name in kwargs:
                if name in given:
                    raise TypeError(f"{cls.__name__}.from_pretrained got multiple values for {name!r}.")
                given[name] = kwargs.pop(name)
        for old, new in cls.renamed_arguments.items():
            given[new] = renamed_argument(given.get(new), kwargs, old, new, f"{cls.__name__}.from_pretrained")
        given = {name: value for name, value in given.items() if value is not None}
        checkpoint = model_io.open_task_checkpoint(path, cls, ignore_stored_head)
        backbone = BertBackbone.from_pretrained(checkpoint, dtype=dtype, **{**cls.backbone_arguments, **kwargs})
        if ignore_stored_head:
            backbone.head_weights = {}
        arguments = dict(given)
        for stored in cls.stored_settings:
            arguments.update(stored.load(checkpoint, backbone, {k: given[k] for k in stored.arguments if k in given}))
        preprocessor = cls.pretrained_preprocessor(checkpoint, preprocessor, **arguments)
        model = cls(backbone, **arguments, preprocessor=preprocessor)
        model.load_head_weights(backbone.head_weights, source=checkpoint.path, warn=cls.head_is_stored(checkpoint))
        return model

    @classmethod
    def pretrained_preprocessor(cls, path, preprocessor="auto", **arguments):
        """The preprocessor a task loaded by `from_pretrained(path, preprocessor=...)` gets (`arguments`: the
        model's constructor arguments): "auto": the directory's vocabulary (`preprocessor_class.from_pretrained`)
        when it holds one, else None; a `BertPreprocessor` or None: itself. The directory's vocabulary must have
        the size of its config's `vocab_size` (`tokenizers.vocabulary.check_vocab_size`; tables padded by up to
        1% accepted)."""
        if isinstance(preprocessor, str) and preprocessor == "auto":
            checkpoint = model_io.open_checkpoint(path)
            if cls.preprocessor_class is None or not checkpoint.has_vocabulary:
                return None
            preprocessor = cls.preprocessor_class.from_pretrained(checkpoint.directory)
            # The directory's vocabulary must be its model's, not only fit its table (a vocab.txt cut short).
            preprocessor.check_vocabulary(checkpoint.bert_config().vocab_size, checkpoint.config_file or checkpoint.path,
                                          allow_smaller=False)
        return preprocessor

    @classmethod
    def head_is_stored(cls, checkpoint):
        """Whether a head missing from `checkpoint` deserves a warning (a feature-based tagger's directory without
        a saved tagger is a plain BERT, whose tagger always starts random)."""
        return True

    @classmethod
    def head_setting_keys(cls):
        """The config.json entries that describe this class's head (`stored_settings` with `head`)."""
        return tuple(key for stored in cls.stored_settings if stored.head for key in stored.keys)

    @classmethod
    def describe_directory(cls, checkpoint):
        """What this class's entries say of a directory that holds it, for messages (e.g. ["with a CRF"])."""
        return [d for d in (stored.describe(checkpoint) for stored in cls.stored_settings) if d]

    def head_tables(self):
        """{head name: weight rows} of the model's heads (`checkpoints.head_weights`' builders, through
        `model_io`): what `save_pretrained` writes and `from_pretrained` assigns. A subclass lists its heads."""
        return {}

    def saved_architecture(self):
        """The config.json `architectures` entry the model is saved as: its class's first registered one."""
        return model_io.entry_of(self).architectures[0]

    def serving_kind(self):
        """What the model's export serves (its class's registered `serving`, a key of the export's table)."""
        return model_io.entry_of(self).serving

    def config_entries(self, label_names=None):
        """The config.json entries `save_pretrained` writes for the model's task (`stored_settings`' `save`)."""
        entries = {}
        for stored in self.stored_settings:
            entries.update(stored.save(self, label_names))
        return entries

    # ------------------------------------------------------------------------------ compile
    # The learning rate of `compile(optimizer="auto")`: the paper's fine-tuning rates are 5e-5, 3e-5, 2e-5.
    default_learning_rate = 5e-5

    def default_loss(self):
        """The loss of `compile(loss="auto")`; None for a model that computes its own (`compute_loss`)."""
        return None

    def default_metrics(self):
        """The weighted metrics of `compile(metrics="auto")`; None for a model that reports its own."""
        return None

    def computes_own_loss(self):
        """Whether the subclass computes its loss and metrics in `compute_loss` (so `compile` takes none)."""
        return type(self).compute_loss is not keras.Model.compute_loss

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto", **kwargs):
        """`keras.Model.compile` with the task's training setup by default (as keras-hub's tasks).

        - `optimizer="auto"`: Adam with decoupled weight decay 0.01 (none on biases and LayerNorm), epsilon
          1e-6 and gradients clipped to a global norm of 1.0, as the paper fine-tunes, at a constant rate
          `default_learning_rate` (5e-5; the pretrainer's is 1e-4). With bias correction: the original's
          uncorrected moments make the first steps about 3x larger, which its warmup absorbs and a constant
          rate does not. For the warmup and linear decay of the paper, pass
          `keras_bert_impl.training.optimization.create_optimizer(lr, num_train_steps, num_warmup_steps)`.
        - `loss="auto"`: the task's loss, `default_loss()`; `metrics="auto"` and `weighted_metrics="auto"`:
          the task's metrics, `default_metrics()`, weighted by `sample_weight` (none when `metrics` is given).

        A model that computes its own loss (token tagging, span QA, pre-training: their labels carry
        ignored positions or several targets) takes no `loss` or `metrics`: passing one raises
        `ValueError` instead of being dropped. It applies `sample_weight` itself (`models.losses`). A model
        trained with a Keras loss refuses `loss=None`, which JAX would train at a constant loss of 0.
        """
        name = type(self).__name__
        self._auto_optimizer = isinstance(optimizer, str) and optimizer == "auto"
        if self._auto_optimizer:
            optimizer = keras.optimizers.AdamW(
                learning_rate=self.default_learning_rate, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
            )
            optimizer.exclude_from_weight_decay(var_names=["^bias$", "^gamma$", "^beta$"])
        own = self.computes_own_loss()
        if own:
            for argument, value in (("loss", loss), ("metrics", metrics), ("weighted_metrics", weighted_metrics)):
                if not (value is None or (isinstance(value, str) and value == "auto")):
                    raise ValueError(
                        f"{name} computes its own loss and metrics ({', '.join(m.name for m in self._own_metrics())}), "
                        f"leaving out the ignored positions; compile({argument}=...) cannot replace them. "
                        f"Leave {argument} out, or subclass {name} and override compute_loss."
                    )
            loss = metrics = weighted_metrics = None
        else:
            if isinstance(loss, str) and loss == "auto":
                loss = self.default_loss()
            if loss is None:
                raise ValueError(f"{name}.compile(loss=None): the model has no loss to train with (JAX would train "
                                 "at a constant loss of 0). Leave loss out for the task's own, or pass one.")
            auto_metrics = isinstance(metrics, str) and metrics == "auto"
            if isinstance(weighted_metrics, str) and weighted_metrics == "auto":
                # The task's metrics only when no metrics were asked for: no second "accuracy" beside the user's.
                weighted_metrics = self.default_metrics() if auto_metrics else None
            metrics = None if auto_metrics else metrics
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, weighted_metrics=weighted_metrics, **kwargs)

    def get_compile_config(self):
        config = super().get_compile_config()
        if config is not None and getattr(self, "_auto_optimizer", False):
            # Keras' AdamW does not save its weight-decay exclusions: rebuilt as compile() builds it.
            config["optimizer"] = "auto"
        return config

    def compile_from_config(self, config):
        """Compiles a reloaded model as it was compiled (Keras does not call an overridden `compile`)."""
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _own_metrics(self):
        """The metrics the model updates in its own `compute_loss` (its public Metric attributes)."""
        return [m for k, m in vars(self).items() if isinstance(m, keras.metrics.Metric) and not k.startswith("_")]

    def add_mean_metrics(self, *names):
        """Sets a `keras.metrics.Mean(name=name)` attribute per name, for `compute_loss` to update and
        fit/evaluate to report."""
        for name in names:
            setattr(self, name, keras.metrics.Mean(name=name))

    # ----------------------------------------------------------------------------- head weights
    def load_head_weights(self, weights, source="checkpoint", warn=True):
        """Assigns every head found in `weights` (Hugging Face names, e.g. `backbone.head_weights`).

        Returns the names of the heads absent from `weights`, which keep their initialization (with a
        warning unless `warn=False`). Raises `ValueError` on a partial head or a shape mismatch.
        """
        missing = model_io.load_heads(self, weights, source)
        self._newly_initialized_heads = ",".join(missing)
        if missing and warn:
            warnings.warn(f"{source}: no {' or '.join(missing)} weights; initialized randomly.", stacklevel=3)
        return missing

    @property
    def newly_initialized_heads(self):
        """The names of the heads holding their random initialization: after `from_pretrained` (or
        `load_head_weights`), those the checkpoint lacked; on a model built otherwise, every head.

        What a fine-tuning driver checks before an evaluation-only run (a random head scores at chance).

        Examples:

        >>> from keras_bert_impl.config import BertConfig
        >>> from keras_bert_impl.models.backbone import BertBackbone
        >>> from keras_bert_impl.models.classifier import BertClassifier
        >>> model = BertClassifier(BertBackbone(BertConfig.preset("bert_tiny")), num_classes=2)
        >>> model.newly_initialized_heads
        ['classifier']
        >>> _ = model.load_head_weights(model_io.head_weights(model))
        >>> model.newly_initialized_heads
        []
        """
        stored = getattr(self, "_newly_initialized_heads", None)
        if stored is None:
            return model_io.head_names(self)
        return stored.split(",") if stored else []

    def save_pretrained(self, directory, label_names=None, settings=None, extra_files=None, **kwargs):
        """Writes the model as a Hugging Face directory (`model_io.save_model`): config.json (the backbone's
        config, the model's architecture and its task's entries, `config_entries`), model.safetensors (backbone
        and heads), which `from_pretrained` and transformers read back; with a preprocessor, its vocab.txt and
        tokenizer_config.json (casing, normalization, `sequence_length`), so that `from_pretrained(directory)`
        comes with the same preprocessor. Every file is written once, from this model.

        Args:
            directory: output directory.
            label_names: optional class names for config.json's `id2label` / `label2id` (label tasks;
                `id2label=` is its former name, accepted with a DeprecationWarning).
            settings: more config.json entries, e.g. the recipes' `max_seq_length`.
            extra_files: {file name: JSON value} written beside the model (e.g. NER's label_list.json), which
                `ModelDirectory.extra_file` reads.
        """
        label_names = renamed_argument(label_names, kwargs, "id2label", "label_names", "save_pretrained")
        if kwargs:
            raise TypeError(f"save_pretrained got unexpected argument(s): {', '.join(sorted(kwargs))}.")
        model_io.check_savable(self, directory)  # before anything is computed or written
        preprocessor = self.preprocessor
        model_io.save_model(
            self, directory, architecture=self.saved_architecture(),
            settings={**self.config_entries(label_names), **(settings or {})},
            tokenizer=None if preprocessor is None else preprocessor.tokenizer,
            sequence_length=None if preprocessor is None else preprocessor.sequence_length, extra_files=extra_files,
            files=self.write_layout_files)

    def write_layout_files(self, directory):
        """Writes the files the class's directories keep beside config.json (before the weights; e.g. a sentence
        encoder's sentence-transformers modules). None by default."""

    # ---------------------------------------------------------------------------- serialization
    @property
    def dtype_policy(self):
        """The backbone's dtype policy, which the heads run in (keras.Model's functional constructor takes none)."""
        backbone = getattr(self, "backbone", None)  # None until the subclass's constructor sets it
        return self._dtype_policy if backbone is None else backbone.dtype_policy

    @dtype_policy.setter
    def dtype_policy(self, value):
        keras.Model.dtype_policy.fset(self, value)

    def get_config(self):
        backbone = keras.saving.serialize_keras_object(self.backbone)
        # The policies of the quantized layers of the whole task, heads included, by path: the rebuilt
        # backbone hands them to the heads, which take their dtype policy from it.
        dtype = serialize_dtype_policy(self, self.backbone.dtype_policy)
        backbone["config"]["dtype"] = dtype
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": backbone,
            "dtype": dtype,
            **self.task_config(),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)  # the backbone's, which its config carries
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        config["preprocessor"] = keras.saving.deserialize_keras_object(config.get("preprocessor"))
        return cls(**config)


def renamed_argument(value, kwargs, old, new, owner):
    """`value` of the argument `new`, or the value given under its former name `old` (popped from `kwargs`),
    with a `DeprecationWarning`. One name per concept across the task models: `num_classes` (keras-hub's,
    formerly `num_labels` for the taggers) and `label_names` (formerly `id2label`)."""
    if old not in kwargs:
        return value
    old_value = kwargs.pop(old)
    if value is not None:
        raise TypeError(f"{owner}: pass {new} only ({old} is its former name).")
    warnings.warn(f"{owner}: {old}= is deprecated; pass {new}=.", DeprecationWarning, stacklevel=3)
    return old_value


def dense_head(units, backbone, dropout=None, name="classifier"):
    """The layers of a linear head on the backbone's features: (Dropout or None, Dense(units)).

    The Dense layer is initialized as the backbone's (truncated normal, `initializer_range`) and runs in
    the backbone's dtype policy; the task model casts its logits to float32.
    """
    dropout_layer = None
    if dropout is not None:
        dropout_layer = BertDropout(dropout, dtype=backbone.dtype_policy, name=f"{name}_dropout")
    dense = keras.layers.Dense(units, kernel_initializer=truncated_normal(backbone.config.initializer_range),
                               dtype=backbone.dtype_policy, name=name)
    return dropout_layer, dense


def bilstm_layer(units, name="bilstm"):
    """The "+ BiLSTM" layer of the token-level heads (the paper's Table 5): a randomly initialized
    `Bidirectional(LSTM(units, return_sequences=True))`, outputs concatenated ([B, T, 2 * units]), in Keras'
    global dtype policy (its inputs are cast to it); None when `units` is None.

    Call it with `mask=` the padding mask (bool [B, T]): padded steps leave the LSTM states unchanged, so
    they feed neither direction, and their outputs are zeros.

    Examples:

    >>> layer = bilstm_layer(4)
    >>> tuple(layer(keras.ops.ones((2, 5, 3)), mask=keras.ops.ones((2, 5), "bool")).shape)
    (2, 5, 8)
    >>> bilstm_layer(None) is None
    True
    """
    if units is None:
        return None
    if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units < 1:
        raise ValueError(f"bilstm_units must be None (no BiLSTM) or a positive integer, got {units!r}.")
    return keras.layers.Bidirectional(
        keras.layers.LSTM(int(units), return_sequences=True), merge_mode="concat", name=name)


def _rows_of_one_batch(x, batch_size):
    """Whether `x` (an array, a tensor, or a dict / list of them) has the same number of rows in each part, at
    most `batch_size` (a dataset or a generator: False)."""
    parts = list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, (list, tuple)) else [x]
    rows = {part.shape[0] if hasattr(part, "shape") and len(part.shape) else None for part in parts}
    return len(rows) == 1 and None not in rows and 0 < next(iter(rows)) <= batch_size
