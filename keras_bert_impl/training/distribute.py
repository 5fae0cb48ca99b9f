"""Distribution: tf.distribute strategies by name (TPU, Mirrored, MultiWorker) on the TensorFlow backend,
keras.distribution.DataParallel on JAX, and mixed precision. TensorFlow and JAX by nature; the models never
import this module (the sums over replicas that losses need are in `backends/tf_replicas.py`).

A recipe does:

    distribution = distribute.get_distribution(args.strategy, tpu=args.tpu)
    with distribution.scope():
        model = ...
        model.compile(optimizer=..., steps_per_execution=args.steps_per_execution)
    per_replica_batch = distribution.per_replica_batch_size(args.train_batch_size)

Under "multiworker" every worker runs the same recipe and the chief (worker 0) alone writes the output
directory: `Distribution.write_dir(output_dir)` is the one place that decides where a worker writes
(module `keras_bert_impl.runners.launch` starts the workers on one machine).

`--train_batch_size` keeps the original's meaning: the GLOBAL batch (TPUEstimator's train_batch_size),
split evenly over the replicas: global batch = per-replica batch x replicas.
"""

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile

import keras

from keras_bert_impl.training.strategy_names import MIXED_PRECISION, STRATEGY_NAMES
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.optional_dependencies import require_tensorflow

# The strategies that are tf.distribute's (TensorFlow by nature).
TF_STRATEGY_NAMES = ("tpu", "mirrored", "multiworker")



@dataclasses.dataclass
class Distribution:
    """What a recipe needs from a strategy: a scope, the replica count, and the backend object.

    Attributes:
        name: the resolved strategy name ("tpu", "mirrored", "multiworker", "gpu", "cpu",
            "data_parallel" or "default").
        num_replicas: number of model replicas a global batch is split over.
        tf_strategy: the `tf.distribute.Strategy` on the TensorFlow backend, else None.
        keras_distribution: the `keras.distribution.Distribution` set globally on JAX, else None.
        is_chief: whether this process writes the outputs: False only on the non-chief workers of a
            multi-worker job (TensorFlow) or the processes other than 0 of a multi-process JAX job.
        num_processes: worker processes of the job (TensorFlow workers or JAX processes).
    """

    name: str
    num_replicas: int = 1
    tf_strategy: object = None
    keras_distribution: object = None
    is_chief: bool = True
    num_processes: int = 1

    def scope(self):
        """Context to build the model and optimizer in (`strategy.scope()` on TensorFlow)."""
        if self.tf_strategy is not None:
            return self.tf_strategy.scope()
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def write_dir(self, output_dir, read_back=()):
        """Context giving the directory this process writes its outputs to: `output_dir` on the chief;
        on another worker a fresh temporary directory, deleted on exit, for the checkpoint and log
        copies that every worker of a multi-worker job writes (the writes run the same reads of
        replicated variables on every worker).

        `read_back` names entries of `output_dir` (files, or directories of files) that the recipe reads
        from its write directory, e.g. its checkpoints: in the temporary directory each existing file is a
        symbolic link to the chief's, so that every worker resumes from the same files. The recipe's
        writes replace a link atomically (`file_io.atomic_path`), never the chief's file.

        Examples:

        >>> with Distribution("default").write_dir("run") as directory:
        ...     directory
        'run'
        >>> with Distribution("multiworker", 2, is_chief=False).write_dir("run") as directory:
        ...     directory != "run" and os.path.isdir(directory)
        True
        >>> os.path.exists(directory)
        False
        """
        if self.is_chief:
            os.makedirs(output_dir, exist_ok=True)
            yield output_dir
            return
        directory = tempfile.mkdtemp(prefix="keras_bert_impl_worker_")
        try:
            for name in read_back:
                _link_entry(os.path.join(output_dir, name), os.path.join(directory, name))
            yield directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    @property
    def is_tpu(self):
        return self.name == "tpu"

    @property
    def is_multiprocess_jax(self):
        """True in a JAX job of several processes: a `keras.distribution` spanning every process's devices."""
        return self.keras_distribution is not None and self.num_processes > 1

    @property
    def whole_batches_only(self):
        """True where a batch smaller than the global batch cannot run: on a TPU (static shapes) and in a
        multi-process JAX job (Keras gives each process an equal slice of every global batch)."""
        return self.is_tpu or self.is_multiprocess_jax

    @property
    def process_share(self):
        """`(process index, process count)` in a multi-process JAX job, where each process feeds its share of
        every global batch (`batching.share_of_batch`); None elsewhere (tf.distribute splits the batches)."""
        if not self.is_multiprocess_jax:
            return None
        import jax

        return jax.process_index(), self.num_processes

    def per_replica_batch_size(self, global_batch_size):
        if global_batch_size % self.num_replicas:
            raise ValueError(
                f"The global batch size {global_batch_size} must be a multiple of the {self.num_replicas} "
                f"replicas of the {self.name!r} strategy."
            )
        return global_batch_size // self.num_replicas


class CrossProcessPredictions:
    """`model` with a `predict_on_batch` that runs in a multi-process JAX job, where Keras' cannot: there
    Keras takes each process's batch as its share of a global batch and returns outputs spread over every
    process's devices, which no process can read whole.

    Every process calls `predict_on_batch(x)` with the same whole batch `x` (the model's input dict). The
    batch is padded to a multiple of the job's devices (copies of its last row), each process feeds its
    share (`batching.share_of_batch`), the model runs once over the global batch, and every process gets
    the whole batch's outputs back (`process_allgather`), in order, without the padding rows. Other
    attributes are the model's.
    """

    def __init__(self, model):
        self.model = model
        self._function = None

    def __getattr__(self, name):
        return getattr(self.model, name)

    def predict_on_batch(self, x):
        import jax
        import numpy as np
        from jax.experimental import multihost_utils

        from keras_bert_impl.data.batching import share_of_batch

        rows = len(keras.tree.flatten(x)[0])
        padded = -(-rows // jax.device_count()) * jax.device_count()
        x = keras.tree.map_structure(
            lambda a: np.concatenate([a, np.repeat(a[-1:], padded - rows, axis=0)]) if padded > rows else a,
            keras.tree.map_structure(np.asarray, x))
        share = share_of_batch(x, jax.process_index(), jax.process_count())
        distribution = keras.distribution.distribution()
        global_x = keras.tree.map_structure(lambda a: jax.make_array_from_process_local_data(
            distribution.get_data_layout(a.shape).backend_layout, a), share)
        if self._function is None:
            def predict(trainable, non_trainable, inputs):
                outputs, _ = self.model.stateless_call(trainable, non_trainable, inputs, training=False)
                return outputs

            self._function = jax.jit(predict)
        outputs = self._function([v.value for v in self.model.trainable_variables],
                                 [v.value for v in self.model.non_trainable_variables], global_x)
        outputs = multihost_utils.process_allgather(outputs, tiled=True)
        return keras.tree.map_structure(lambda a: np.asarray(a)[:rows], outputs)


def _link_entry(source, target):
    """`target` as a symbolic link to the file `source`, or as a directory of links to the files of the
    directory `source`; nothing when `source` does not exist."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(source):
            _link_entry(os.path.join(source, name), os.path.join(target, name))
    elif os.path.isfile(source):
        os.symlink(os.path.abspath(source), target)


def get_distribution(name="auto", tpu=None):
    """Resolves a strategy name for the current Keras backend.

    Args:
        name: one of `STRATEGY_NAMES`. "auto" picks a TPU when one is reachable, else all local GPUs
            (Mirrored on TensorFlow, DataParallel on JAX), else the default single-device strategy.
        tpu: TPU address for "tpu" ("" or None = the Colab / local TPU).

    Returns:
        A `Distribution`.
    """
    if name not in STRATEGY_NAMES:
        raise ValueError(f"Unknown --strategy {name!r}; allowed: {', '.join(STRATEGY_NAMES)}.")
    backend = keras.backend.backend()
    if backend not in ("tensorflow", "jax"):
        if name in ("auto", "cpu", "gpu"):
            return Distribution(name="default")
        raise UserInputError(f"--strategy {name!r} needs the TensorFlow or JAX backend; the {backend} backend "
                             "trains on one device here.")
    if name in TF_STRATEGY_NAMES:  # tf.distribute's: one line naming the extra where TensorFlow is missing
        require_tensorflow(f"--strategy {name} (a tf.distribute strategy)")
    if backend == "tensorflow":
        return _tf_distribution(name, tpu)
    return _jax_distribution(name)


def _tf_distribution(name, tpu):
    import tensorflow as tf

    if name == "tpu" or (name == "auto" and _tpu_reachable(tpu)):
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
        return Distribution("tpu", strategy.num_replicas_in_sync, tf_strategy=strategy)
    if name == "multiworker":  # before anything starts the TensorFlow runtime (listing devices does)
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy multiworker needs the TF_CONFIG environment variable (cluster and task).")
        try:
            json.loads(os.environ["TF_CONFIG"])
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        keras_compat.average_multi_worker_metrics()
        resolver = strategy.cluster_resolver
        # The chief is task "chief" when the cluster has one, else worker 0 (TensorFlow's own rule).
        cluster = resolver.cluster_spec().as_dict()
        is_chief = resolver.task_type == "chief" or ("chief" not in cluster and resolver.task_id == 0)
        return Distribution("multiworker", strategy.num_replicas_in_sync, tf_strategy=strategy, is_chief=is_chief,
                            num_processes=len(cluster.get("chief", [])) + len(cluster.get("worker", [])))
    gpus = tf.config.list_logical_devices("GPU")
    if name == "mirrored" or (name == "auto" and len(gpus) > 1):
        strategy = tf.distribute.MirroredStrategy()
        return Distribution("mirrored", strategy.num_replicas_in_sync, tf_strategy=strategy)
    if name == "gpu":
        if not gpus:
            raise ValueError("--strategy gpu: TensorFlow sees no GPU on this machine.")
        return Distribution("gpu", 1, tf_strategy=tf.distribute.OneDeviceStrategy("/gpu:0"))
    if name == "cpu":
        return Distribution("cpu", 1, tf_strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    if name == "data_parallel":
        raise ValueError("--strategy data_parallel is for the JAX backend; use mirrored on TensorFlow.")
    return Distribution("default", 1, tf_strategy=tf.distribute.get_strategy())


def _tpu_reachable(tpu):
    """True when a TPU can be resolved (Colab sets COLAB_TPU_ADDR / TPU_NAME; Cloud TPU VMs have a local one)."""
    import tensorflow as tf

    if not (tpu or os.environ.get("COLAB_TPU_ADDR") or os.environ.get("TPU_NAME")):
        return False
    try:
        tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        return True
    except (ValueError, RuntimeError):
        return False


# The environment of a multi-process JAX job, read by `keras.distribution.initialize` (the launcher sets it).
JAX_PROCESS_ENVIRONMENT = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                           "KERAS_DISTRIBUTION_PROCESS_ID")


def _jax_distribution(name):
    if name in ("multiworker",):
        raise ValueError("--strategy multiworker is TensorFlow's; on JAX use data_parallel (several processes: "
                         "python -m keras_bert_impl.runners.launch --backend jax).")
    num_processes = _jax_num_processes()
    if num_processes > 1:
        if name not in ("auto", "data_parallel"):
            raise ValueError(f"--strategy {name!r} trains in one process, but KERAS_DISTRIBUTION_NUM_PROCESSES is "
                             f"{num_processes}; use --strategy=data_parallel.")
        _initialize_jax_processes()
    devices = keras.distribution.list_devices()  # every process's devices
    if name in ("cpu", "gpu") or (name == "auto" and len(devices) == 1):
        return Distribution("default")
    distribution = keras.distribution.DataParallel(devices=devices)
    keras.distribution.set_distribution(distribution)
    import jax

    return Distribution("data_parallel", len(devices), keras_distribution=distribution,
                        is_chief=jax.process_index() == 0, num_processes=num_processes)


def _jax_num_processes():
    """The process count of a multi-process JAX job from its environment (1 when not set)."""
    missing = [k for k in JAX_PROCESS_ENVIRONMENT if k not in os.environ]
    if len(missing) == len(JAX_PROCESS_ENVIRONMENT):
        return 1
    if missing:
        raise ValueError(f"A multi-process JAX job needs all of {', '.join(JAX_PROCESS_ENVIRONMENT)}; "
                         f"{', '.join(missing)} is not set.")
    try:
        num_processes, process_id = (int(os.environ[k]) for k in JAX_PROCESS_ENVIRONMENT[1:])
    except ValueError:
        raise ValueError("KERAS_DISTRIBUTION_NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID must be integers; got "
                         f"{os.environ['KERAS_DISTRIBUTION_NUM_PROCESSES']!r} and "
                         f"{os.environ['KERAS_DISTRIBUTION_PROCESS_ID']!r}.") from None
    if not 0 <= process_id < num_processes:
        raise ValueError(f"KERAS_DISTRIBUTION_PROCESS_ID={process_id} must be in [0, {num_processes}).")
    return num_processes


def _initialize_jax_processes():
    """`jax.distributed.initialize` through Keras (coordinator = the first job address), once per process.

    On CPUs the processes' collectives (the gradient all-reduce) run over gloo; JAX's CPU client has no
    cross-process collectives otherwise. GPUs and TPUs use their own (NCCL, ICI) whatever this setting.
    """
    import jax

    if jax.distributed.is_initialized():
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    keras.distribution.initialize()


def set_mixed_precision(name):
    """Sets Keras' global dtype policy from `--mixed_precision {float32,bfloat16,float16}`.

    bfloat16 (TPU, CPUs with AVX-512 BF16, Ampere+ GPUs) needs no loss scaling; float16 (older GPUs) gets
    a `keras.optimizers.LossScaleOptimizer` from `model.compile` automatically. Variables stay float32;
    LayerNorm, softmax and the losses compute in float32.
    """
    if name not in MIXED_PRECISION:
        raise ValueError(f"Unknown --mixed_precision {name!r}; allowed: {', '.join(MIXED_PRECISION)}.")
    keras.config.set_dtype_policy(MIXED_PRECISION[name])
    return MIXED_PRECISION[name]
