"""The paths chosen by the kind of CPU (`keras_bert_impl.backends.cpu_paths`): how the CPU is read, which path
each kind takes, how a user forces one, and every path of every operation of this backend forced in turn and
checked against the keras.ops path, in values and gradients, so that a path chosen only on another kind of
CPU (oneDNN's products on AVX-512, for one) is still tested on this machine."""

import contextlib
import itertools
import os
import re

import keras
import numpy as np
import pytest

from keras_bert_impl import backends
from keras_bert_impl.backends import cpu_paths
from tests.backend_utils import to_numpy, value_and_input_gradients

BACKEND = keras.backend.backend()
PATHS = cpu_paths.PATHS.get(BACKEND, {})

# /proc/cpuinfo's first block of three machines (flags cut to those that matter here).
CPUINFO = {
    "avx512": "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\n"
              "flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_bf16 avx512_vnni\n\n"
              "processor\t: 1\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu\n",
    "avx2": "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse4_2 avx avx2 fma f16c vaes\n",
    "other": "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve bf16 i8mm\nCPU part\t: 0xd40\n",
}


@pytest.mark.parametrize("kind", sorted(CPUINFO))
def test_the_cpu_kind_and_flags_are_read_from_cpuinfo(kind, tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO[kind])
    cpu = cpu_paths.read_cpu(str(path))
    assert cpu["kind"] == kind
    expected_flags = {"avx512": ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                                 "avx512_vnni", "avx512_bf16"],
                      "avx2": ["sse4_2", "avx", "avx2", "fma", "f16c"],
                      "other": ["asimd", "sve", "bf16", "i8mm"]}[kind]
    assert cpu["flags"] == expected_flags
    assert cpu["model"] == {"avx512": "AMD EPYC 9R14", "avx2": "AMD EPYC"}.get(kind, cpu["model"])


def test_an_unreadable_cpuinfo_gives_kind_other_with_no_flags(tmp_path):
    cpu = cpu_paths.read_cpu(str(tmp_path / "missing"))
    assert cpu["kind"] == "other" and cpu["flags"] == []


def test_this_machines_cpu_is_read_once_with_the_flags_of_proc_cpuinfo():
    if not os.path.exists("/proc/cpuinfo"):
        pytest.skip("no /proc/cpuinfo")
    first = cpu_paths.describe_cpu()
    assert cpu_paths.describe_cpu() is first
    with open("/proc/cpuinfo") as f:
        flags = set(next((line.split(":", 1)[1].split() for line in f if line.split(":")[0].strip() in
                          ("flags", "Features")), []))
    assert first["flags"] == [f for f in cpu_paths.RECORDED_FLAGS if f in flags]
    assert first["kind"] == ("avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "other")


def test_avx512_keeps_the_paths_measured_there_and_avx2_takes_mkl_products_on_torch():
    """AVX-512 (and an unknown CPU) take the paths the layers took before the CPU was read: oneDNN's
    products on torch, SDPA, TensorFlow's written-out transpose in the dense gradient, the explicit attention
    on TensorFlow and JAX's CPU. AVX2 differs in torch's products without a gradient only
    (benchmarks/results/cpu_paths)."""
    before = {("torch", "dense"): "onednn", ("torch", "dense_inference"): "onednn", ("torch", "attention"): "fused",
              ("tensorflow", "dense"): "transposed_gradient", ("tensorflow", "attention"): "explicit",
              ("jax", "attention"): "explicit"}
    assert {(b, op) for b, ops in cpu_paths.PATHS.items() for op in ops} == set(before)
    for (backend, operation), path in before.items():
        assert cpu_paths.default_path(backend, operation, "avx512") == path
        assert cpu_paths.default_path(backend, operation, "other") == path
        assert cpu_paths.default_path(backend, operation, "avx2") == ("blas" if (backend, operation) == (
            "torch", "dense_inference") else path)


def test_a_forced_path_wins_over_the_environment_variable_which_wins_over_the_cpu(monkeypatch):
    monkeypatch.setenv(cpu_paths.ENVIRONMENT_VARIABLE, " attention = explicit , dense=blas,dense_inference=onednn")
    assert cpu_paths.chosen_paths("torch") == {"dense": "blas", "dense_inference": "onednn", "attention": "explicit"}
    with cpu_paths.forced(dense="onednn"):
        assert cpu_paths.chosen_paths("torch") == {"dense": "onednn", "dense_inference": "onednn",
                                                   "attention": "explicit"}
        with cpu_paths.forced(attention="fused", dense_inference="blas"):
            assert cpu_paths.chosen_paths("torch") == {"dense": "onednn", "dense_inference": "blas",
                                                       "attention": "fused"}
        assert cpu_paths.path("torch", "attention") == "explicit"
    monkeypatch.delenv(cpu_paths.ENVIRONMENT_VARIABLE)
    assert cpu_paths.path("torch", "dense") == cpu_paths.default_path("torch", "dense")


@pytest.mark.parametrize("value, message", [
    ("dense", "entry 'dense': expected operation=path with an operation of ['attention', 'dense', 'dense_inference']"),
    ("gelu=erf", "entry 'gelu=erf': expected operation=path"),
    ("dense=", "entry 'dense=': expected operation=path"),
])
def test_a_malformed_environment_variable_is_named_with_its_entry(monkeypatch, value, message):
    monkeypatch.setenv(cpu_paths.ENVIRONMENT_VARIABLE, value)
    with pytest.raises(ValueError, match="^" + re.escape(f"{cpu_paths.ENVIRONMENT_VARIABLE}={value!r}: {message}")):
        cpu_paths.path("torch", "dense")


def test_a_path_of_another_backend_is_refused_with_this_backends_paths(monkeypatch):
    monkeypatch.setenv(cpu_paths.ENVIRONMENT_VARIABLE, "dense=blas")
    with pytest.raises(ValueError, match="^KERAS_BERT_IMPL_CPU_PATHS: dense=blas: the tensorflow backend's dense "
                                         "paths are transposed_gradient, matmul.$"):
        cpu_paths.path("tensorflow", "dense")
    with pytest.raises(ValueError, match=r"^forced\(dense='sdpa'\): expected an operation of \['attention', "
                                         r"'dense', 'dense_inference'\] and one of its paths \['blas', "
                                         r"'matmul', 'onednn', 'transposed_gradient'\].$"):
        with cpu_paths.forced(dense="sdpa"):
            pass


# ------------------------------------------------------------------- every path of this backend, forced
def _dense_reference(x, kernel, bias):
    """The keras.ops path: one matmul and the bias."""
    return keras.ops.matmul(x, kernel) + bias


def _attention_reference(q, k, v, bias):
    """The keras.ops path: softmax(q k^T / sqrt(d) + bias) v by einsums."""
    logits = keras.ops.einsum("brad,btad->bart", q, k) / np.sqrt(q.shape[-1]) + bias  # [B, A, R, T]
    return keras.ops.einsum("bart,btad->brad", keras.ops.softmax(logits, axis=-1), v)  # [B, R, A, d]


def _dense_inputs(fan_in, fan_out):
    rng = np.random.RandomState(4)
    return [rng.normal(size=s).astype("float32") for s in ((3, 5, fan_in), (fan_in, fan_out), (fan_out,))]


def _attention_inputs(rows):
    """q [2, rows, 2, 8], k, v [2, 5, 2, 8] and BERT's additive bias [2, 1, 1, 5] (2 padding positions)."""
    rng = np.random.RandomState(0)
    q, k, v = (rng.normal(size=(2, n, 2, 8)).astype("float32") for n in (rows, 5, 5))
    bias = np.zeros((2, 1, 1, 5), "float32")
    bias[1, ..., 3:] = -10000.0
    return [q, k, v, bias]


def _forced_cases(operation):
    return [pytest.param(path, id=f"{BACKEND}-{operation}-{path}") for path in PATHS.get(operation, ())]


def _check_against_reference(function, reference, inputs, differentiated, path, operation):
    """`function` under the forced path (None: the path chosen), its gradient recorded: its values and the
    gradients of the `differentiated` inputs equal `reference`'s (the keras.ops path) to float32 rounding."""
    upstream = np.random.RandomState(9).normal(size=to_numpy(reference(*inputs)).shape).astype("float32")
    with cpu_paths.forced(**({} if path is None else {operation: path})):
        ours, ours_grads = value_and_input_gradients(function, inputs, upstream, differentiated)
    expected, expected_grads = value_and_input_gradients(reference, inputs, upstream, differentiated)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)
    for a, b in zip(ours_grads, expected_grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _call(operation, inputs, function=None):
    """backends' function of `operation` (or `function`) on `inputs` (numpy), as training or inference calls
    it: torch's products without a gradient (`dense_inference`) under `torch.no_grad`, the others with every
    input requiring a gradient."""
    tensors = [keras.ops.convert_to_tensor(a) for a in inputs]
    function = function or (backends.dense if operation.startswith("dense") else backends.attention)
    if BACKEND != "torch":
        return function(*tensors)
    import torch

    if operation == "dense_inference":
        with torch.no_grad():
            return function(*tensors)
    return function(*(t.requires_grad_() for t in tensors))


@pytest.mark.parametrize("path", _forced_cases("dense"))
@pytest.mark.parametrize("fan_in, fan_out", [(8, 16), (16, 8)])
def test_every_dense_path_equals_the_keras_ops_product_in_values_and_gradients(path, fan_in, fan_out):
    _check_against_reference(backends.dense, _dense_reference, _dense_inputs(fan_in, fan_out), (0, 1, 2),
                             path, "dense")


@pytest.mark.parametrize("path", _forced_cases("dense_inference"))
@pytest.mark.parametrize("fan_in, fan_out", [(8, 16), (16, 8)])
def test_every_dense_path_without_a_gradient_equals_the_keras_ops_product(path, fan_in, fan_out):
    inputs = _dense_inputs(fan_in, fan_out)
    with cpu_paths.forced(dense_inference=path):
        ours = to_numpy(_call("dense_inference", inputs))
    np.testing.assert_allclose(ours, to_numpy(_dense_reference(*inputs)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("path", _forced_cases("dense_inference") or [None])
def test_dense_gelu_is_the_exact_gelu_of_the_keras_ops_product_at_inference_and_in_training(path, monkeypatch):
    """`backends.dense_gelu` against keras.ops' exact GELU of the keras.ops product: its values at inference,
    and in training its values and the gradients of the input, kernel and bias. On torch at inference through
    oneDNN it is one product with the GELU in its epilogue (`torch_ops.onednn_dense_gelu`), in training never."""
    inputs = _dense_inputs(16, 24)

    def reference(x, kernel, bias):
        return keras.ops.gelu(_dense_reference(x, kernel, bias), approximate=False)

    calls = []
    if BACKEND == "torch":
        from keras_bert_impl.backends import torch_ops

        fused = torch_ops.onednn_dense_gelu
        monkeypatch.setattr(torch_ops, "onednn_dense_gelu", lambda *a: calls.append("fused") or fused(*a))
    forced = {} if path is None else {"dense_inference": path}
    with cpu_paths.forced(**forced):
        ours = to_numpy(_call("dense_inference", inputs, backends.dense_gelu))
    np.testing.assert_allclose(ours, to_numpy(reference(*inputs)), rtol=1e-5, atol=1e-5)
    assert calls == (["fused"] if path == "onednn" else [])

    _check_against_reference(backends.dense_gelu, reference, inputs, (0, 1, 2), path, "dense_inference")
    assert calls == (["fused"] if path == "onednn" else [])  # none more in training


@pytest.mark.parametrize("path", _forced_cases("attention"))
@pytest.mark.parametrize("rows", [5, 1])  # every query row, and the [CLS] row alone (`output_range=1`)
def test_every_attention_path_equals_the_keras_ops_attention_in_values_and_gradients(path, rows):
    """The queries', keys' and values' gradients: attention without dropout on the probabilities is what
    training computes with `attention_probs_dropout_prob=0`."""
    _check_against_reference(backends.attention, _attention_reference, _attention_inputs(rows), (0, 1, 2),
                             path, "attention")


def _path_functions():
    """{(operation, path): (module, name)}: the function each forced path of this backend calls."""
    from keras import ops

    if BACKEND == "torch":
        from keras_bert_impl.backends import torch_ops

        return {("dense", "onednn"): (torch_ops, "onednn_dense"), ("dense", "blas"): (torch_ops, "blas_dense"),
                ("dense_inference", "onednn"): (torch_ops, "onednn_dense"),
                ("dense_inference", "blas"): (torch_ops, "blas_dense"),
                ("attention", "fused"): (torch_ops, "scaled_dot_product_attention"),
                ("attention", "explicit"): (torch_ops, "attention_logits")}
    if BACKEND == "tensorflow":
        from keras_bert_impl.backends import tf_ops

        return {("dense", "transposed_gradient"): (tf_ops, "dense_with_transposed_gradient"),
                ("dense", "matmul"): (tf_ops, "matmul_dense"),
                ("attention", "fused"): (ops, "dot_product_attention"), ("attention", "explicit"): (ops, "softmax")}
    from keras_bert_impl.backends import jax_ops

    return {("attention", "fused"): (ops, "dot_product_attention"), ("attention", "explicit"): (jax_ops, "unfused")}


def test_each_forced_path_calls_its_own_function_and_not_the_others(monkeypatch):
    """torch: oneDNN's autograd function or `addmm` (with a gradient and without), SDPA or two matmuls;
    TensorFlow: the written-out gradient or plain matmul, Keras' fused op or the einsums and softmax; JAX:
    Keras' fused op or the einsums with the probabilities kept apart (`jax_ops.unfused`)."""
    functions = _path_functions()
    assert set(functions) == {(operation, path) for operation, paths in PATHS.items() for path in paths}
    calls = []
    for module, name in set(functions.values()):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _name=name, **k: calls.append(_name) or _f(*a, **k))
    for (operation, path), (_, name) in functions.items():
        calls.clear()
        others = {other: next(p for p in paths if p != path) if other.startswith(operation[:5]) else paths[0]
                  for other, paths in PATHS.items() if other != operation}
        with cpu_paths.forced(**{operation: path}, **others):  # every other operation on another path
            _call(operation, _dense_inputs(8, 16) if operation.startswith("dense") else _attention_inputs(5))
        assert calls == [name], (operation, path, calls)


@pytest.mark.parametrize("path, node", [("onednn", "OneDNN"), ("blas", "AddmmBackward")])
def test_torch_dense_paths_equal_a_float64_product_with_a_transposed_kernel_view(path, node):
    """`backends.dense` in float32 on torch's CPU through each path (oneDNN's autograd function, or `addmm`):
    its output and the gradients of its input, kernel (here a transposed view, as the masked-LM head passes
    the word embeddings) and bias equal a float64 matmul's to float32 rounding. A frozen kernel gets no
    gradient; bfloat16 takes torch.matmul."""
    if BACKEND != "torch":
        pytest.skip("backends/torch_ops: the torch backend's paths")
    import torch

    rng = np.random.RandomState(3)
    x64 = torch.tensor(rng.normal(size=(3, 7, 16)), requires_grad=True)
    table64 = torch.tensor(rng.normal(size=(10, 16)), requires_grad=True)  # [out, in]: kernel = table.T
    bias64 = torch.tensor(rng.normal(size=(10,)), requires_grad=True)
    upstream = torch.tensor(rng.normal(size=(3, 7, 10)))
    x, table, bias = (t.detach().float().requires_grad_() for t in (x64, table64, bias64))

    with cpu_paths.forced(dense=path):
        y = backends.dense(x, table.t(), bias)
        assert any(node in type(n).__name__ for n in _graph(y.grad_fn))
        (y * upstream.float()).sum().backward()
        y64 = torch.matmul(x64, table64.t()) + bias64
        (y64 * upstream).sum().backward()
        for ours, reference in ((y, y64), (x.grad, x64.grad), (table.grad, table64.grad), (bias.grad, bias64.grad)):
            np.testing.assert_allclose(ours.detach().numpy(), reference.detach().numpy(), rtol=1e-5, atol=1e-5)

        frozen = table.detach()
        x.grad = None
        backends.dense(x, frozen.t()).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(frozen.sum(0).numpy(), x.shape), rtol=1e-5)

        xb, kb = x.detach().bfloat16(), table.detach().t().bfloat16()
        assert torch.equal(backends.dense(xb, kb), torch.matmul(xb, kb))


def _graph(grad_fn):
    """Every autograd node reachable from `grad_fn` (torch)."""
    seen, stack = [], [grad_fn]
    while stack:
        node = stack.pop()
        if node is None or any(node is n for n in seen):
            continue
        seen.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return seen


# ------------------------------------------------------------------ the real model under every combination
@pytest.fixture(scope="module")
def minilm_and_reference(minilm_path):
    """all-MiniLM-L6-v2 as our backbone, a padded batch, and transformers' BertModel outputs on it."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from keras_bert_impl.models.backbone import BertBackbone

    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_path)
    encoded = tokenizer(["A man is eating food.", "The girl is carrying a baby on her back in the park."],
                        padding=True, return_tensors="np")
    batch = {"token_ids": encoded["input_ids"].astype("int32"), "segment_ids": encoded["token_type_ids"].astype("int32"),
             "padding_mask": encoded["attention_mask"].astype("int32")}
    with torch.no_grad():
        out = transformers.BertModel.from_pretrained(minilm_path).eval()(
            **{name: torch.tensor(encoded[name]).long() for name in ("input_ids", "token_type_ids", "attention_mask")})
    return BertBackbone.from_pretrained(minilm_path), batch, out.last_hidden_state.numpy(), out.pooler_output.numpy()


def test_the_real_model_under_every_combination_of_paths_equals_transformers(minilm_and_reference):
    """all-MiniLM-L6-v2 under every combination of this backend's paths equals transformers' BertModel within
    1e-4. On torch each combination runs twice: without a gradient (Keras' predict; `dense_inference`) and
    with one (a training step's forward; `dense`)."""
    from tests.backend_utils import inference

    backbone, batch, sequence_reference, pooled_reference = minilm_and_reference
    real = batch["padding_mask"].astype(bool)
    combinations = [dict(zip(PATHS, chosen)) for chosen in itertools.product(*PATHS.values())]
    assert len(combinations) == {"torch": 8, "tensorflow": 4, "jax": 2}[BACKEND]
    if BACKEND == "torch":
        import torch

        modes = [torch.no_grad, contextlib.nullcontext]
    else:
        modes = [contextlib.nullcontext]
    for paths, mode in itertools.product(combinations, modes):
        with cpu_paths.forced(**paths), mode():
            outputs = inference(backbone, batch)
        sequence_diff = np.abs(outputs["sequence_output"] - sequence_reference)[real].max()
        pooled_diff = np.abs(outputs["pooled_output"] - pooled_reference).max()
        assert sequence_diff <= 1e-4 and pooled_diff <= 1e-4, (paths, mode, sequence_diff, pooled_diff)
