"""Distribution: two replicas train exactly like one device; strategy resolution (TPU path patched)."""

import json
import os
import subprocess
import sys
import types

import keras
import numpy as np
import pytest

from keras_bert_impl.backends import tf_replicas
from keras_bert_impl.training import distribute
from tests.finetuning_files import REPO, subprocess_env, two_host_devices


def _run_check(backend, strategy):
    env = dict(subprocess_env(), KERAS_BACKEND=backend)
    env["XLA_FLAGS"] = two_host_devices()
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "tests", "distributed_check.py"), strategy],
        env=env, capture_output=True, text=True, timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.slow
def test_two_replicas_give_the_single_device_losses_step_by_step():
    backend = keras.backend.backend()
    if backend == "torch":
        with pytest.raises(ValueError, match="needs the TensorFlow or JAX backend"):
            distribute.get_distribution("mirrored")
        return
    strategy = "mirrored" if backend == "tensorflow" else "data_parallel"
    result = _run_check(backend, strategy)
    assert (result["name"], result["replicas"]) == (strategy, 2)
    # The sentence encoders' losses score each example against the whole global batch (in-batch negatives; CoSENT's
    # pairs): the replicas gather each other's embeddings.
    for model in ("classifier", "pretrainer", "sentence_ranking", "sentence_cosent"):
        single, replicated = np.array(result["single"][model]), np.array(result["replicated"][model])
        assert len(single) == 4 and np.ptp(single) > 1e-3, "the weights must change between steps"
        np.testing.assert_allclose(replicated, single, rtol=1e-5, err_msg=model)
    if backend == "tensorflow":  # BERT's global-norm clipping applies to the summed gradient
        clipping = result["clipping"]
        for summed, expected in zip(clipping["summed"], clipping["expected"]):
            np.testing.assert_allclose(summed, expected, rtol=1e-6)


class _FakeTPUStrategy:
    def __init__(self, resolver):
        self.resolver = resolver
        self.num_replicas_in_sync = 8

    def scope(self):
        import contextlib

        return contextlib.nullcontext()


@pytest.mark.tensorflow
def test_tpu_strategy_is_resolved_connected_and_initialized(monkeypatch):
    import tensorflow as tf

    calls = []
    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver",
                        lambda tpu: calls.append(("resolve", tpu)) or types.SimpleNamespace(address=tpu))
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", lambda r: calls.append(("connect", r.address)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", lambda r: calls.append(("initialize", r.address)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", _FakeTPUStrategy)
    distribution = distribute._tf_distribution("tpu", "grpc://10.0.0.2:8470")
    assert calls == [("resolve", "grpc://10.0.0.2:8470"), ("connect", "grpc://10.0.0.2:8470"),
                     ("initialize", "grpc://10.0.0.2:8470")]
    assert distribution.is_tpu and distribution.num_replicas == 8
    assert distribution.per_replica_batch_size(64) == 8
    with pytest.raises(ValueError, match="global batch size 60 must be a multiple of the 8 replicas"):
        distribution.per_replica_batch_size(60)
    # "auto" takes the TPU when Colab announces one, and the default strategy when none is there.
    calls.clear()
    monkeypatch.setenv("COLAB_TPU_ADDR", "10.0.0.2:8470")
    assert distribute._tf_distribution("auto", None).is_tpu and calls[0] == ("resolve", "")
    monkeypatch.delenv("COLAB_TPU_ADDR")
    monkeypatch.delenv("TPU_NAME", raising=False)
    assert distribute._tf_distribution("auto", None).name in ("default", "mirrored")


@pytest.mark.tensorflow
def test_multiworker_needs_a_valid_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG environment variable"):
        distribute._tf_distribution("multiworker", None)
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        distribute._tf_distribution("multiworker", None)


def test_unknown_names_are_refused_with_the_allowed_ones():
    with pytest.raises(ValueError, match="Unknown --strategy 'horovod'; allowed: auto, tpu, mirrored"):
        distribute.get_distribution("horovod")
    with pytest.raises(ValueError, match="Unknown --mixed_precision 'int8'"):
        distribute.set_mixed_precision("int8")


def test_cpu_strategy_and_replica_helpers_outside_a_strategy():
    distribution = distribute.get_distribution("cpu")
    assert distribution.num_replicas == 1
    with distribution.scope():
        assert tf_replicas.num_replicas_in_sync() == 1
    value = keras.ops.convert_to_tensor(3.0)
    assert float(keras.ops.convert_to_numpy(tf_replicas.replica_sum(value))) == 3.0


def test_mixed_precision_names_map_to_keras_policies():
    try:
        assert distribute.set_mixed_precision("bfloat16") == "mixed_bfloat16"
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
        assert distribute.set_mixed_precision("float16") == "mixed_float16"
    finally:
        distribute.set_mixed_precision("float32")
    assert keras.config.dtype_policy().name == "float32"


def test_a_multi_process_jax_environment_is_checked_before_jax_starts(monkeypatch):
    for name in distribute.JAX_PROCESS_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    assert distribute._jax_num_processes() == 1
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    with pytest.raises(ValueError, match="KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_PROCESS_ID is not set"):
        distribute._jax_num_processes()
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "127.0.0.1:1234")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "2")
    with pytest.raises(ValueError, match=r"KERAS_DISTRIBUTION_PROCESS_ID=2 must be in \[0, 2\)"):
        distribute._jax_num_processes()
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "one")
    with pytest.raises(ValueError, match="must be integers; got '2' and 'one'"):
        distribute._jax_num_processes()
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "1")
    assert distribute._jax_num_processes() == 2
    # A one-device strategy in a multi-process job is refused before JAX connects to the coordinator.
    with pytest.raises(ValueError, match="--strategy 'cpu' trains in one process, but KERAS_DISTRIBUTION_NUM_PROCES"):
        distribute._jax_distribution("cpu")
    with pytest.raises(ValueError, match="--strategy multiworker is TensorFlow's; on JAX use data_parallel"):
        distribute._jax_distribution("multiworker")


def test_a_non_chief_reads_the_chiefs_checkpoints_through_links_and_never_writes_them(tmp_path):
    from keras_bert_impl.utils.file_io import write_json

    chief = tmp_path / "run"
    (chief / "checkpoints").mkdir(parents=True)
    (chief / "checkpoints" / "ckpt-00000002.weights.h5").write_bytes(b"weights")
    (chief / "checkpoints" / "state.json").write_text('{"2": 1}')
    (chief / "best.weights.h5").write_bytes(b"best")
    worker = distribute.Distribution("multiworker", 2, is_chief=False, num_processes=2)
    with worker.write_dir(str(chief), read_back=("checkpoints", "best.weights.h5", "absent")) as directory:
        assert sorted(os.listdir(directory)) == ["best.weights.h5", "checkpoints"]
        assert open(os.path.join(directory, "checkpoints", "ckpt-00000002.weights.h5"), "rb").read() == b"weights"
        # The worker's own (atomic) write replaces its link; the chief's file keeps its content.
        write_json(os.path.join(directory, "checkpoints", "state.json"), {"4": 2})
        assert (chief / "checkpoints" / "state.json").read_text() == '{"2": 1}'
        assert not os.path.islink(os.path.join(directory, "checkpoints", "state.json"))
    assert not os.path.exists(directory)
    assert sorted(os.listdir(chief / "checkpoints")) == ["ckpt-00000002.weights.h5", "state.json"]


def test_only_a_keras_distribution_over_several_processes_is_a_multiprocess_jax_job():
    one_process = distribute.Distribution("data_parallel", 2, keras_distribution=object())
    two_processes = distribute.Distribution("data_parallel", 2, keras_distribution=object(), num_processes=2)
    tf_workers = distribute.Distribution("multiworker", 2, tf_strategy=object(), num_processes=2)
    assert [d.is_multiprocess_jax for d in (one_process, two_processes, tf_workers)] == [False, True, False]
    assert [d.whole_batches_only for d in (one_process, two_processes, tf_workers)] == [False, True, False]
