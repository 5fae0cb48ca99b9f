"""The benchmark suite's plumbing (benchmarks/run_benchmarks.py --smoke): tiny shapes, one repeat, the current
backend. It checks that every case runs against its peers and that the table and JSON hold the ratios; the
timings themselves mean nothing here (the real numbers are in benchmarks/results/results.md)."""

import doctest
import importlib.util
import itertools
import json
import os

import keras
import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _suite():
    spec = importlib.util.spec_from_file_location("run_benchmarks", os.path.join(REPO, "benchmarks", "run_benchmarks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.large
@pytest.mark.tensorflow  # keras-hub, a peer measured, needs TensorFlow
def test_smoke_run_measures_us_and_the_peers_and_writes_the_ratio_table(tmp_path):
    backend = keras.backend.backend()
    workloads = ["forward", "epoch", "train_step_bf16", "user_head_pooled", "user_head_tokens"]
    report = _suite().main(["--smoke", "--interleave", f"--backends={backend}", f"--workloads={','.join(workloads)}",
                            f"--output_dir={tmp_path}"])
    rows = {r["workload"]: r for r in report["rows"]}
    assert set(rows) == set(workloads)
    # --interleave: the step workloads time every library in one process; the others one process per library.
    peers = ["keras_hub", "transformers"] if backend == "torch" else ["keras_hub"]
    for name in ("forward", "user_head_pooled", "user_head_tokens"):
        assert rows[name]["interleaved"] and rows[name]["ours"]["interleaved_with"] == peers
    assert not rows["epoch"]["interleaved"] and not rows["train_step_bf16"]["interleaved"]
    for row in rows.values():
        assert row["ours"]["backend"] == backend and row["keras_hub"]["library"] == "keras_hub"
        assert row["ours"]["median_s"] > 0 and row["ratio_vs_keras_hub"] > 0 and row["ours"]["peak_rss_mb"] > 100
        assert row["target_met"] in (True, False)
    if backend == "torch":
        assert rows["forward"]["transformers"]["library"] == "transformers" and rows["forward"]["ratio_vs_transformers"] > 0
    # The user's own functional heads are compared with keras-hub's backbone under the same head.
    for name in ("user_head_pooled", "user_head_tokens"):
        assert rows[name]["ratio_vs_keras_hub"] > 0 and rows[name]["target"] == 1.1
    # Bucketing: our epoch computes on fewer padded token slots than the fixed-length pipeline.
    assert rows["epoch"]["ours"]["padded_tokens"] < rows["epoch"]["keras_hub"]["padded_tokens"]
    # bf16 training: both libraries timed under mixed_bfloat16, ours in float32 as well.
    bf16 = rows["train_step_bf16"]
    assert bf16["ratio_vs_our_fp32"] == round(bf16["ours"]["float32_median_s"] / bf16["ours"]["median_s"], 3)
    assert len(bf16["ours"]["float32_times"]) == len(bf16["ours"]["times"]) == 1
    assert bf16["ours"]["compute_dtypes"] == bf16["keras_hub"]["compute_dtypes"] == ["bfloat16"]
    stored = json.load(open(tmp_path / "results_smoke.json"))
    assert [r["workload"] for r in stored["rows"]] == workloads
    assert stored["versions"]["keras"]
    table = (tmp_path / "results_smoke.md").read_text()
    assert "| forward | bert_tiny 8×32 ↔ | " + backend in table and "× keras-hub" in table
    assert "| epoch | bert_tiny 8×32 | " + backend in table
    # The CPU's instruction set and the CPU paths ours took are recorded beside the figures.
    from keras_bert_impl.backends import cpu_paths

    cpu = cpu_paths.describe_cpu()
    assert (stored["machine"]["cpu_kind"], stored["machine"]["cpu_flags"]) == (cpu["kind"], cpu["flags"])
    assert f"; instruction set: {cpu['kind']} (" in table
    assert rows["forward"]["ours"]["cpu_paths"] == cpu_paths.chosen_paths(backend)
    assert "CPU paths ours took" in table


@pytest.mark.large
@pytest.mark.tensorflow  # keras-hub, a peer measured, needs TensorFlow
def test_cpu_paths_smoke_times_every_combination_of_paths_against_keras_hub_and_marks_the_chosen_one(tmp_path):
    from keras_bert_impl.backends import cpu_paths

    spec = importlib.util.spec_from_file_location("cpu_paths_benchmark",
                                                  os.path.join(REPO, "benchmarks", "cpu_paths_benchmark.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend = keras.backend.backend()
    report = module.main(["--smoke", f"--backends={backend}", "--warmup=1", "--repeats=2", f"--output_dir={tmp_path}"])
    assert report["failures"] == [] and report["backends_done"] == [backend]
    paths = cpu_paths.PATHS[backend]
    for workload, (*_, timed) in module.WORKLOADS.items():
        operations = [op for op in timed if op in paths]  # the operations of this backend the workload times
        rows = [r for r in report["rows"] if r["workload"] == workload]
        expected = {tuple(combination) for combination in itertools.product(*(paths[op] for op in operations))}
        assert {tuple(r["paths"].values()) for r in rows} == expected
        for r in rows:  # the forced paths reached the measuring process
            assert {op: r["cpu_paths_taken"][op] for op in r["paths"]} == r["paths"]
            assert len(r["times"]) == 2 and r["round_ratio_min"] <= r["round_ratio_median"] <= r["round_ratio_max"]
        chosen = [r for r in rows if r["chosen_here"]]
        assert len(chosen) == 1 and chosen[0] is rows[0]
        assert chosen[0]["paths"] == {op: cpu_paths.chosen_paths(backend)[op] for op in operations}
    table = (tmp_path / "results.md").read_text()
    assert f"; instruction set: {cpu_paths.describe_cpu()['kind']} (" in table and "Incomplete" not in table
    assert json.load(open(tmp_path / "results.json"))["machine"]["cpu_kind"] == cpu_paths.describe_cpu()["kind"]


def _bench_case():
    spec = importlib.util.spec_from_file_location("bench_case", os.path.join(REPO, "benchmarks", "bench_case.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interleaved_timing_runs_each_librarys_step_in_turn_with_the_first_moving_each_round():
    bench_case = _bench_case()
    calls = []
    bench_case.STEPS = {"forward": lambda args, library: (lambda: calls.append(library))}
    args = type("Args", (), {"warmup": 1, "repeats": 4})()
    times = bench_case.interleaved("forward", ["ours", "keras_hub", "transformers"], args)
    assert calls[:3] == ["ours", "keras_hub", "transformers"]  # warm-up, each library once
    assert calls[3:] == ["ours", "keras_hub", "transformers", "keras_hub", "transformers", "ours",
                         "transformers", "ours", "keras_hub", "ours", "keras_hub", "transformers"]
    assert {library: len(t) for library, t in times.items()} == {"ours": 4, "keras_hub": 4, "transformers": 4}
    assert set(_suite().INTERLEAVABLE) == set(_bench_case().STEPS)


def _gpu_pretraining():
    spec = importlib.util.spec_from_file_location("gpu_pretraining",
                                                  os.path.join(REPO, "benchmarks", "gpu_pretraining.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pretraining_step_flops_are_three_times_the_forward_products_of_the_built_model():
    """MFU's numerator: 2 FLOPs per multiply-add of every encoder kernel of a built BertPretrainer (bert_tiny)
    at each of T positions, attention's two T x T products, the pooler and NSP kernels once a sequence and the
    masked-LM transform and tied output table at each masked position; times 3 for the backward pass."""
    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.pretrainer import BertPretrainer

    layers, hidden, heads, intermediate = _bench_case().SIZES["bert_tiny"]
    vocab, batch, seq, predictions = 30522, 3, 32, 5
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate)
    model = BertPretrainer(BertBackbone(config))
    kernels = {w.path: int(np.prod(w.shape)) for w in model.weights if w.path.endswith("kernel")}
    encoder = sum(size for path, size in kernels.items() if "encoder" in path or "transformer" in path)
    heads_once = sum(size for path, size in kernels.items() if "pooler" in path or "next_sentence" in path)
    mlm_transform = sum(size for path, size in kernels.items() if "masked_lm" in path or "mlm" in path)
    assert encoder == layers * (4 * hidden ** 2 + 2 * hidden * intermediate)
    assert heads_once == hidden ** 2 + 2 * hidden and mlm_transform == hidden ** 2
    forward = batch * (2 * encoder * seq + layers * 4 * seq ** 2 * hidden + 2 * heads_once
                       + predictions * 2 * (mlm_transform + hidden * vocab))
    gpu_pretraining = _gpu_pretraining()
    assert gpu_pretraining.pretraining_step_flops("bert_tiny", batch, seq, predictions, vocab) == 3 * forward
    assert doctest.testmod(gpu_pretraining).failed == 0  # the bert_base count in its docstring


@pytest.mark.large
@pytest.mark.tensorflow  # keras-hub, a peer measured, needs TensorFlow
def test_gpu_pretraining_smoke_times_every_library_and_writes_a_complete_table(tmp_path):
    backend = keras.backend.backend()
    gpu_pretraining = _gpu_pretraining()
    assert gpu_pretraining.main(["--smoke", f"--backends={backend}", f"--out={tmp_path}"]) == 0
    report = json.load(open(tmp_path / "results.json"))
    libraries = ["ours", "keras_hub"] + gpu_pretraining.VARIANTS.get(backend, [])
    # One process times every library with train_on_batch, then inside fit (2 steps a call).
    assert [r["library"] for r in report["rows"]] == libraries * 2 and report["complete"] and report["failures"] == []
    # Keras on torch accepts only steps_per_execution=1; a fit call is 2 steps on every backend.
    assert [(r["timing"], r["steps_per_call"]) for r in report["rows"]] == (
        [("train_on_batch", 1)] * len(libraries) + [("fit", 2)] * len(libraries))
    assert [r["steps_per_execution"] for r in report["rows"][len(libraries):]] == [
        1 if r["backend"] == "torch" else 2 for r in report["rows"][len(libraries):]]
    for r in report["rows"]:
        assert (r["backend"], r["size"], r["batch"], r["seq"], r["predictions"]) == (
            "torch" if r["library"] == "transformers" else backend, "bert_tiny", 2, 32, 5)
        assert r["median_s"] > 0 and r["sequences_per_s"] == round(2 / r["median_s"], 1)
        assert r["mfu"] is None and r["mfu_vs_matmul"] is None  # no GPU: no peak, no measured matmul
    table = (tmp_path / "results.md").read_text()
    assert "partial" not in table and f"| {backend} | bert_tiny | 2 x 32 | train_on_batch | ours |" in table
    assert f"| {backend} | bert_tiny | 2 x 32 | fit/{1 if backend == 'torch' else 2} | ours |" in table
    report["complete"] = False
    assert "(partial: the run did not finish)" in gpu_pretraining.markdown(report)


def test_a_fit_row_counts_model_flops_per_step_against_the_peak_and_the_measured_matmul():
    gpu_pretraining = _gpu_pretraining()
    result = {"backend": "jax", "library": "ours", "workload": "pretrain_fit", "steps_per_execution": 10,
              "steps_per_call": 10,
              "size": "bert_base", "batch": 256, "seq": 128, "predictions": 20, "median_s": 0.1, "times": [0.1]}
    r = gpu_pretraining.row(result, peak=1000.0, matmul=800.0)
    # 256 x 69.928989696 GFLOPs (the docstring's bert_base count a sequence) in 0.1 s: 179.0 TFLOP/s.
    assert (r["tflops"], r["mfu"], r["mfu_vs_matmul"]) == (179.0, 0.179, 0.2238)
    assert (r["timing"], r["steps_per_execution"], r["sequences_per_s"]) == ("fit", 10, 2560.0)
    # A row of the table before --fit (no size or timing fields) reads as bert_base with train_on_batch.
    old = {k: v for k, v in r.items()
           if k not in ("size", "timing", "steps_per_execution", "steps_per_call", "mfu_vs_matmul")}
    table = gpu_pretraining.markdown({"complete": True, "command": "c", "date": "d", "gpu": "g", "peak_tflops": 1000.0,
                                      "matmul_tflops": 800.0, "versions": {}, "rows": [old, r], "failures": []})
    assert "| jax | bert_base | 256 x 128 | train_on_batch | ours | 0.1000 | 2560.0 | 179.0 | 17.9% |  | 1.00 |" in table
    assert "| jax | bert_base | 256 x 128 | fit/10 | ours | 0.1000 | 2560.0 | 179.0 | 17.9% | 22.4% | 1.00 |" in table
    sizes = _bench_case().SIZES
    assert sizes["bert_large"] == (24, 1024, 16, 4096)


def test_a_variant_replaces_its_path_during_each_step_only():
    bench_case = _bench_case()
    from keras_bert_impl import backends

    original, seen = backends.float32_epilogue, []
    step = bench_case._with_path_replaced(bench_case.OURS_VARIANTS["ours_float32_epilogue"],
                                          lambda: seen.append(backends.float32_epilogue("bfloat16", True)))
    step()
    step()
    assert seen == [True, True] and backends.float32_epilogue is original


@pytest.mark.large
@pytest.mark.tensorflow  # keras-hub, a peer measured, needs TensorFlow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="the command starts each group's process under its own backend: one run covers them")
def test_serving_latency_smoke_times_every_path_of_its_groups_against_the_reference_and_writes_the_table(tmp_path):
    spec = importlib.util.spec_from_file_location("serving_latency", os.path.join(REPO, "benchmarks", "serving_latency.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.main(["--smoke", "--groups=runtimes,keras_tensorflow", f"--work_dir={tmp_path / 'work'}",
                        f"--output_dir={tmp_path}"])
    runtimes = json.load(open(tmp_path / "latency_bert_tiny_runtimes.json"))
    keras_group = json.load(open(tmp_path / "latency_bert_tiny_keras_tensorflow.json"))
    assert set(runtimes["shapes"]["1x8"]) == {"ours_onnx", "ours_onnx_int8", "hf_onnx_fused", "hf_onnx_fused_int8",
                                              "ours_litert", "ours_litert_int8"}
    assert set(keras_group["shapes"]["1x8"]) == {"ours_predict", "ours_compiled", "ours_xla", "ours_savedmodel",
                                                 "keras_hub_predict", "keras_hub_compiled"}
    for report in (runtimes, keras_group):
        assert report["machine"]["isa"]
        for timings in report["shapes"].values():
            assert all(0 < t["p50_ms"] <= t["p99_ms"] for t in timings.values())
    # Float paths compute our Keras model's logits (transformers' on the same weights); int8 within 0.05.
    for key, diff in {**runtimes["max_abs_diff"], **keras_group["max_abs_diff"]}.items():
        if not key.startswith("keras_hub"):
            assert diff < (0.05 if "int8" in key else 1e-4), key
    assert runtimes["gemm_gflops"]["float32"] > 0 and runtimes["gemm_gflops"]["int8"] > 0
    assert "| runtimes | ours_onnx |" in text and "hf_onnx_fused p50 / ours_onnx p50" in text


@pytest.mark.large
def test_sentence_encode_throughput_smoke_checks_the_embeddings_times_both_libraries_and_writes_its_table(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "sentence_encode_throughput", os.path.join(REPO, "benchmarks", "sentence_encode_throughput.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend = keras.backend.backend()
    report = module.main(["--smoke", f"--output_dir={tmp_path}"])
    assert report["max_abs_difference"] < 1e-5  # the same embeddings as sentence-transformers'
    assert {name: len(times) for name, times in report["seconds"].items()} == {"ours": 2, "sentence_transformers": 2}
    assert all(rate > 0 for rate in report["sentences_per_second"].values())
    assert report["machine"]["cpu_count"] == os.cpu_count() and isinstance(report["machine"]["cpu_flags"], list)
    table = module.main(["--table", f"--output_dir={tmp_path}"])
    assert f"| {backend} | {report['sentences_per_second']['ours']} |" in table
    assert f"Our fastest backend, measured against sentence-transformers in the same rounds: {backend}," in table
