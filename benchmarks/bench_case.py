"""One benchmark measurement in a fresh process: a workload, a library, the backend of KERAS_BACKEND.

    KERAS_BACKEND=jax python benchmarks/bench_case.py --workload forward --library ours --size bert_base

Prints one JSON line: the median seconds per unit (a step, or an epoch) over `--repeats` timed runs after
`--warmup` untimed ones, every timing, and the process's peak resident memory. `benchmarks/run_benchmarks.py`
runs these cases one after another and computes the ratios; this file is not a test.

Workloads (random weights; the speed of a model does not depend on its values):
  forward      backbone forward at a fixed [batch, seq] shape (`predict_on_batch`; transformers: inference_mode)
  forward_bf16 our backbone forward in float32 and in mixed_bfloat16 with the same weights (both timed)
  train_step   classifier (pooled output -> Dense) training step at a fixed shape, AdamW, loss, update
  train_step_bf16  that step under the mixed_bfloat16 policy (keras-hub too); ours also in float32 (both timed)
  epoch        one fine-tuning epoch over sequences of realistic lengths (mostly short, a long tail):
               ours with length bucketing and dynamic padding, keras-hub with its fixed-length pipeline
  pretrain     masked LM + NSP training step at a fixed shape with --predictions masked positions, in --policy
  pretrain_fit that step inside `model.fit` with `steps_per_execution` = --steps_per_execution (1 on torch,
               the only value Keras accepts there): one timed unit is one `fit` call of that many steps,
               reported divided by that number, as seconds per step
  user_head_pooled, user_head_tokens
               the user's own head: a functional `keras.Model` with Dense(2) on the backbone's pooled_output
               (or sequence_output: a label per token), trained with keras.optimizers.AdamW (`user_head`)
Libraries: ours (keras_bert_impl), keras_hub (keras_hub.models.BertBackbone), transformers (torch only);
pretrain also the OURS_VARIANTS (ours with one of its accelerator paths replaced); every workload also ours with
CPU paths forced (`keras_bert_impl.backends.cpu_paths`), as `ours@dense=blas@attention=explicit`.
`--library ours,keras_hub,transformers` builds each library's model in this process and times their steps in
turn, round by round (`interleaved`): forward, train_step, pretrain and the user_head workloads.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

SIZES = {  # name: (layers, hidden, heads, intermediate); the presets of BertConfig and keras-hub
    "bert_tiny": (2, 128, 2, 512),
    "bert_small": (4, 512, 8, 2048),
    "bert_base": (12, 768, 12, 3072),
    "bert_large": (24, 1024, 16, 4096),
}
VOCAB, NUM_CLASSES, LEARNING_RATE = 30522, 2, 2e-5


def realistic_lengths(num_examples, max_length, seed=0):
    """Token counts like GLUE/SQuAD inputs: log-normal around 28 tokens, clipped to [8, max_length]."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.lognormal(np.log(28), 0.6, size=num_examples)), 8, max_length).astype(int)


def random_batch(batch, seq, lengths=None, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.full(batch, seq) if lengths is None else lengths
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    return {"token_ids": (rng.integers(1000, VOCAB, size=(batch, seq)) * mask).astype("int32"),
            "segment_ids": np.zeros((batch, seq), "int32"), "padding_mask": mask}


def timed(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# ----------------------------------------------------------------------------------------------- models


def keras_backbone(library, size, dtype=None):
    layers, hidden, heads, intermediate = SIZES[size]
    if library == "ours":
        from keras_bert_impl.models.backbone import BertBackbone
        from keras_bert_impl.config import BertConfig

        config = BertConfig(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                            intermediate_size=intermediate)
        return BertBackbone(config, dtype=dtype)
    import keras_hub

    return keras_hub.models.BertBackbone(vocabulary_size=VOCAB, num_layers=layers, num_heads=heads,
                                         hidden_dim=hidden, intermediate_dim=intermediate, dropout=0.1,
                                         max_sequence_length=512, dtype=dtype)


def keras_classifier(library, size, policy="float32"):
    """The bert_small classifier of `train_step`, built under the global dtype `policy` (as a recipe's
    `--mixed_precision` sets it: float32 variables, bfloat16 compute for "mixed_bfloat16")."""
    import keras

    keras.config.set_dtype_policy(policy)
    if library == "ours":
        from keras_bert_impl.models.classifier import BertClassifier

        model = BertClassifier(keras_backbone("ours", size), num_classes=NUM_CLASSES)
        from keras_bert_impl.training.optimization import create_optimizer

        optimizer = create_optimizer(LEARNING_RATE, 10_000, 100)
    else:
        # keras-hub's BertTextClassifier without its preprocessor: pooled output -> dropout -> Dense.
        backbone = keras_backbone("keras_hub", size)
        pooled = backbone.output["pooled_output"]
        logits = keras.layers.Dense(NUM_CLASSES)(keras.layers.Dropout(0.1)(pooled))
        model = keras.Model(backbone.input, logits)
        optimizer = keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def hf_config(size):
    from transformers import BertConfig as HFConfig

    layers, hidden, heads, intermediate = SIZES[size]
    return HFConfig(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                    intermediate_size=intermediate, num_labels=NUM_CLASSES, attn_implementation="sdpa")


def to_torch(x):
    import torch

    return {"input_ids": torch.from_numpy(x["token_ids"]).long(), "token_type_ids": torch.from_numpy(x["segment_ids"]).long(),
            "attention_mask": torch.from_numpy(x["padding_mask"]).long()}


# -------------------------------------------------------------------------------------------- workloads


def forward_run(args, library):
    """The backbone's forward at a fixed shape, as a callable (`predict_on_batch`; transformers: inference_mode)."""
    x = random_batch(args.batch, args.seq)
    if library == "transformers":
        import torch
        from transformers import BertModel

        model = BertModel(hf_config(args.size)).eval()
        inputs = to_torch(x)

        def run():
            with torch.inference_mode():
                model(**inputs)

        return run
    model = keras_backbone(library, args.size)
    return lambda: model.predict_on_batch(x)


def forward(args):
    return {"times": timed(forward_run(args, args.library), args.warmup, args.repeats)}


def forward_bf16(args):
    import keras

    x = random_batch(args.batch, args.seq)
    fp32 = keras_backbone("ours", args.size)
    bf16 = keras_backbone("ours", args.size, dtype="mixed_bfloat16")
    bf16.set_weights(fp32.get_weights())
    fp32_times = timed(lambda: fp32.predict_on_batch(x), args.warmup, args.repeats)
    bf16_times = timed(lambda: bf16.predict_on_batch(x), args.warmup, args.repeats)
    a, b = fp32.predict_on_batch(x), bf16.predict_on_batch(x)
    a_seq = np.asarray(keras.ops.convert_to_numpy(a["sequence_output"]), "float32")
    b_seq = np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(b["sequence_output"], "float32")))
    return {"times": bf16_times, "float32_times": fp32_times, "gemm_gflops": gemm_gflops(args.warmup, args.repeats),
            "max_abs_diff_sequence_output": float(np.abs(a_seq - b_seq).max()),
            "mean_abs_diff_sequence_output": float(np.abs(a_seq - b_seq).mean()),
            "sequence_output_std": float(a_seq.std())}


def gemm_gflops(warmup, repeats, m=1024, k=768, n=3072):
    """The ceiling of a bf16 speed-up here: one [m, k] x [k, n] matmul (bert_base's FFN at 8 x 128) in float32
    and in bfloat16, through each backend's fastest path (JAX: bf16 operands, float32 result, as BertDense)."""
    import keras

    backend = keras.backend.backend()
    rng = np.random.default_rng(5)
    a32, b32 = rng.normal(size=(m, k)).astype("float32"), rng.normal(size=(k, n)).astype("float32")
    out = {}
    for dtype in ("float32", "bfloat16"):
        if backend == "jax":
            import jax
            import jax.numpy as jnp

            a, b = jnp.asarray(a32, dtype), jnp.asarray(b32, dtype)
            fn = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
            run = lambda: fn(a, b).block_until_ready()  # noqa: E731
        elif backend == "tensorflow":
            import tensorflow as tf

            a, b = tf.cast(a32, dtype), tf.cast(b32, dtype)
            fn = tf.function(lambda: tf.matmul(a, b))
            run = lambda: fn().numpy()  # noqa: E731
        else:
            import torch

            from keras_bert_impl import backends  # float32: oneDNN, as BertDense; bfloat16: torch.matmul

            a, b = torch.from_numpy(a32).to(getattr(torch, dtype)), torch.from_numpy(b32).to(getattr(torch, dtype))
            run = lambda: backends.dense(a, b)  # noqa: E731
        out[dtype] = 2 * m * k * n / 1e9 / statistics.median(timed(run, warmup + 2, repeats * 4))
    return out


def train_step_run(args, library):
    """The classifier's training step at a fixed shape, as a callable."""
    x = random_batch(args.batch, args.seq)
    y = np.random.default_rng(1).integers(0, NUM_CLASSES, size=args.batch).astype("int32")
    if library == "transformers":
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification(hf_config(args.size)).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01, eps=1e-6)
        inputs, labels = to_torch(x), torch.from_numpy(y).long()

        def run():
            optimizer.zero_grad()
            model(**inputs, labels=labels).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

        return run
    model = keras_classifier(library, args.size)
    return lambda: model.train_on_batch(x, y)


def train_step(args):
    return {"times": timed(train_step_run(args, args.library), args.warmup, args.repeats)}


def train_step_bf16(args):
    """`train_step` in mixed_bfloat16 against keras-hub in mixed_bfloat16; ours also in float32, same process."""
    x = random_batch(args.batch, args.seq)
    y = np.random.default_rng(1).integers(0, NUM_CLASSES, size=args.batch).astype("int32")
    result = {}
    if args.library == "ours":
        fp32 = keras_classifier("ours", args.size)
        result["float32_times"] = timed(lambda: fp32.train_on_batch(x, y), args.warmup, args.repeats)
        del fp32
    model = keras_classifier(args.library, args.size, policy="mixed_bfloat16")
    result["times"] = timed(lambda: model.train_on_batch(x, y), args.warmup, args.repeats)
    result["compute_dtypes"] = sorted({layer.compute_dtype for layer in model.layers if layer.weights})
    return result


def epoch(args):
    """One epoch of `--examples` examples of realistic lengths; timed epochs after one warm-up epoch."""
    lengths = realistic_lengths(args.examples, args.seq)
    full = random_batch(args.examples, args.seq, lengths=lengths, seed=2)
    y = np.random.default_rng(3).integers(0, NUM_CLASSES, size=args.examples).astype("int32")
    model = keras_classifier(args.library, args.size)
    if args.library == "ours":
        from keras_bert_impl.data.batching import bucketed_batches
        from keras_bert_impl.runners.finetuning import training_batches
        from keras_bert_impl.tasks.base import FinetuningConfig

        # Variable-length examples and the recipes' pipeline (tf.data on TensorFlow, a PyDataset elsewhere).
        features = {k: [v[i, : lengths[i]] for i in range(args.examples)] for k, v in full.items()}
        config = FinetuningConfig(output_dir="unused", train_batch_size=args.batch, seed=0, max_seq_length=args.seq)
        dataset = training_batches(features, y, config)

        def run():
            model.fit(dataset, epochs=1, verbose=0, shuffle=False)

        padded_tokens = sum(x["token_ids"].size for x, _ in bucketed_batches(features, y, batch_size=args.batch,
                                                                              shuffle=True, max_length=args.seq))
    else:

        def run():
            model.fit(full, y, batch_size=args.batch, epochs=1, verbose=0, shuffle=True)

        padded_tokens = full["token_ids"].size
    result = {"times": timed(run, 1, args.repeats)}
    result.update(real_tokens=int(lengths.sum()), padded_tokens=int(padded_tokens),
                  mean_length=float(lengths.mean()), examples=args.examples)
    return result


# Ours with one of its accelerator paths replaced, timed beside ours (`pretrain`) to measure what the path
# saves: name: (module, function, its replacement during every step).
OURS_VARIANTS = {
    # attention's products, softmax and dropout as separate ops on a CUDA GPU too (torch)
    "ours_unfused_attention": ("keras_bert_impl.backends.torch_ops", "fused_dropout_attention_applies",
                               lambda q: False),
    # Keras' per-variable optimizer loop instead of torch's fused AdamW kernel (torch)
    "ours_keras_adamw": ("keras_bert_impl.backends.torch_adamw", "supports_fused_update", lambda grads, v: False),
    # the last encoder block computed whole and sliced into its [CLS] row and the rest, instead of as two parts
    "ours_whole_last_block": ("keras_bert_impl.backends", "computes_whole_then_splits",
                              lambda training: True),
    # matmuls with float32 results and float32 bias and activation under bfloat16, as on JAX's CPU (JAX)
    "ours_float32_epilogue": ("keras_bert_impl.backends", "float32_epilogue",
                              lambda compute_dtype, training: compute_dtype == "bfloat16"),
}


def _with_path_replaced(variant, step):
    """`step` as a callable that runs with `variant`'s function replaced (torch decides its path at every
    step, JAX when it traces the first)."""
    import importlib

    module_name, name, replacement = variant
    module = importlib.import_module(module_name)

    def run():
        original = getattr(module, name)
        setattr(module, name, replacement)
        try:
            return step()
        finally:
            setattr(module, name, original)

    return run


def split_library(library):
    """A library name and the CPU paths it forces: "ours@dense=blas@attention=explicit" -> ("ours",
    {"dense": "blas", "attention": "explicit"}); "keras_hub" -> ("keras_hub", {})."""
    name, *entries = library.split("@")
    return name, dict(entry.partition("=")[::2] for entry in entries)


def _with_cpu_paths(paths, step):
    """`step` as a callable that runs with `paths` forced (`cpu_paths.forced`; torch reads them at every
    step, JAX and TensorFlow when they trace the first)."""
    if not paths:
        return step
    from keras_bert_impl.backends import cpu_paths

    def run():
        with cpu_paths.forced(**paths):
            return step()

    return run


def cpu_record(library, backend):
    """What a RESULT says about the CPU: its model and instruction set, and for ours the CPU paths it took."""
    from keras_bert_impl.backends import cpu_paths

    name, paths = split_library(library)
    record = {"cpu": cpu_paths.describe_cpu()}
    if name == "ours" or name in OURS_VARIANTS:
        with cpu_paths.forced(**paths):
            record["cpu_paths"] = cpu_paths.chosen_paths(backend)
    return record


def pretrain_run(args, library, steps_per_execution=None):
    """The masked LM + NSP training step at a fixed shape under the dtype policy `--policy`, as a callable:
    ours `BertPretrainer` with BERT's AdamW; keras-hub's backbone with its `MaskedLMHead` (tied to the token
    embeddings, as its `BertMaskedLM`) and a Dense NSP head on the pooled output, two sparse cross-entropy
    losses and Keras' AdamW (keras-hub ships no NSP model); transformers' `BertForPreTraining` (SDPA attention,
    torch's AdamW, fused on a GPU, under `torch.autocast` for mixed_bfloat16). On a GPU every callable returns
    after the step has run on the device.

    With `steps_per_execution` K, the callable runs K steps on the same batch: the Keras models compiled with
    `steps_per_execution=K` and trained by one `model.fit` over K batches (one execution, no host sync between
    its steps; Keras on torch accepts only `steps_per_execution=1`, so there fit runs K executions of one step);
    transformers by K steps in a Python loop, synchronized once after the last."""
    steps = steps_per_execution or 1
    rng = np.random.default_rng(4)
    x = random_batch(args.batch, args.seq)
    positions = np.sort(np.stack([rng.choice(np.arange(1, args.seq - 1), args.predictions, replace=False)
                                  for _ in range(args.batch)]), axis=1).astype("int32")
    masked_ids = np.take_along_axis(x["token_ids"], positions, axis=1).astype("int32")
    nsp = rng.integers(0, 2, size=args.batch).astype("int32")
    if library == "transformers":
        import contextlib

        import torch
        from transformers import BertForPreTraining

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = BertForPreTraining(hf_config(args.size)).to(device).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6,
                                      fused=device == "cuda")
        labels = np.full((args.batch, args.seq), -100, "int64")
        np.put_along_axis(labels, positions, masked_ids, axis=1)
        inputs = {k: v.to(device) for k, v in to_torch(x).items()}
        labels, nsp_labels = torch.from_numpy(labels).to(device), torch.from_numpy(nsp).long().to(device)
        autocast = (lambda: torch.autocast(device, dtype=torch.bfloat16)) if args.policy == "mixed_bfloat16" else (
            contextlib.nullcontext)

        def run():
            for _ in range(steps):
                optimizer.zero_grad()
                with autocast():
                    loss = model(**inputs, labels=labels, next_sentence_label=nsp_labels).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            if device == "cuda":
                torch.cuda.synchronize()

        return run
    import keras

    keras.config.set_dtype_policy(args.policy)
    per_execution = 1 if keras.backend.backend() == "torch" else steps  # Keras' steps_per_execution
    inputs = dict(x, masked_lm_positions=positions)
    if library == "ours" or library in OURS_VARIANTS:
        from keras_bert_impl.models.pretrainer import BertPretrainer
        from keras_bert_impl.training.optimization import create_optimizer

        model = BertPretrainer(keras_backbone("ours", args.size))
        model.compile(optimizer=create_optimizer(1e-4, 10_000, 100), steps_per_execution=per_execution)
        labels = {"masked_lm_ids": masked_ids, "masked_lm_weights": np.ones_like(masked_ids, "float32"),
                  "next_sentence_labels": nsp}
    else:
        import keras_hub

        backbone = keras_backbone("keras_hub", args.size)
        positions_input = keras.Input((None,), dtype="int32", name="masked_lm_positions")
        outputs = backbone(backbone.input)
        mlm = keras_hub.layers.MaskedLMHead(vocabulary_size=VOCAB, token_embedding=backbone.token_embedding,
                                            intermediate_activation="gelu", name="mlm")(
            outputs["sequence_output"], mask_positions=positions_input)
        nsp_logits = keras.layers.Dense(2, name="nsp")(outputs["pooled_output"])
        model = keras.Model({**backbone.input, "masked_lm_positions": positions_input}, {"mlm": mlm, "nsp": nsp_logits})
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0),
                      loss={"mlm": loss, "nsp": loss}, steps_per_execution=per_execution)
        labels = {"mlm": masked_ids, "nsp": nsp}
    if steps_per_execution:
        # K copies of the batch: one fit call of K steps; fit returns after the losses of its last step have
        # reached the host, so the steps have run on the device.
        xs, ys = ({k: np.concatenate([v] * steps) for k, v in tree.items()} for tree in (inputs, labels))

        def step():
            model.fit(xs, ys, batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
    else:
        # train_on_batch returns the step's losses as numbers: the step has run on the device.
        def step():
            model.train_on_batch(inputs, labels)
    return _with_path_replaced(OURS_VARIANTS[library], step) if library in OURS_VARIANTS else step


def pretrain(args):
    return {"times": timed(pretrain_run(args, args.library), args.warmup, args.repeats)}


def pretrain_fit(args):
    return {"times": timed(pretrain_run(args, args.library, args.steps_per_execution), args.warmup, args.repeats)}


def user_head_run(args, library, output):
    """The user's own path: `keras.Model(inputs, Dense(2)(backbone(inputs)[output]))` built with the functional
    API on the library's backbone and trained with Keras' AdamW (transformers: BertModel + torch.nn.Linear on
    the same output, torch's AdamW), as a callable. `output` is "pooled_output" (a sentence head) or "sequence_output" (a
    token head: a label per position)."""
    x = random_batch(args.batch, args.seq)
    rng = np.random.default_rng(1)
    y = rng.integers(0, NUM_CLASSES, size=(args.batch,) if output == "pooled_output" else (args.batch, args.seq))
    y = y.astype("int32")
    if library == "transformers":
        import torch
        from transformers import BertModel

        backbone = BertModel(hf_config(args.size)).train()
        head = torch.nn.Linear(backbone.config.hidden_size, NUM_CLASSES)
        parameters = list(backbone.parameters()) + list(head.parameters())
        optimizer = torch.optim.AdamW(parameters, lr=LEARNING_RATE, weight_decay=0.01, eps=1e-6)
        inputs, labels = to_torch(x), torch.from_numpy(y).long()

        def run():
            optimizer.zero_grad()
            outputs = backbone(**inputs)
            hidden = outputs.pooler_output if output == "pooled_output" else outputs.last_hidden_state
            logits = head(hidden)
            torch.nn.functional.cross_entropy(logits.reshape(-1, NUM_CLASSES), labels.reshape(-1)).backward()
            optimizer.step()

        return run
    import keras

    backbone = keras_backbone(library, args.size)
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in ("token_ids", "segment_ids",
                                                                                 "padding_mask")}
    model = keras.Model(inputs, keras.layers.Dense(NUM_CLASSES)(backbone(inputs)[output]))
    model.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01, epsilon=1e-6),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.train_on_batch(x, y)


def user_head(args, output):
    return {"times": timed(user_head_run(args, args.library, output), args.warmup, args.repeats)}


WORKLOADS = {"forward": forward, "forward_bf16": forward_bf16, "train_step": train_step,
             "train_step_bf16": train_step_bf16, "epoch": epoch, "pretrain": pretrain,
             "pretrain_fit": pretrain_fit, "user_head_pooled": lambda args: user_head(args, "pooled_output"),
             "user_head_tokens": lambda args: user_head(args, "sequence_output")}
# The workloads that `--library a,b,...` can time interleaved in one process: each a step of one library.
STEPS = {"forward": forward_run, "train_step": train_step_run, "pretrain": pretrain_run,
         "pretrain_fit": lambda args, library: pretrain_run(args, library, args.steps_per_execution),
         "user_head_pooled": lambda args, library: user_head_run(args, library, "pooled_output"),
         "user_head_tokens": lambda args, library: user_head_run(args, library, "sequence_output")}


def interleaved(workload, libraries, args):
    """Times `workload` for each of `libraries` in this process, in turn: every library's model is built and
    warmed up, then each of `--repeats` rounds runs one step of each library, the first library of a round
    moving by one each round. Drift of the machine's speed over the run (another process, the CPU's clock)
    then falls on every library alike, where one process per library measures them minutes apart.
    Returns {library: its times}."""
    runs = {}
    for library in libraries:
        if library != "transformers":
            import keras

            keras.utils.set_random_seed(0)
        name, paths = split_library(library)
        runs[library] = _with_cpu_paths(paths, STEPS[workload](args, name))
        for _ in range(args.warmup):
            runs[library]()
    times = {library: [] for library in libraries}
    for round_index in range(args.repeats):
        start = round_index % len(libraries)
        for library in libraries[start:] + libraries[:start]:
            begin = time.perf_counter()
            runs[library]()
            times[library].append(time.perf_counter() - begin)
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", required=True,
                   help=f"One of {sorted(WORKLOADS)}, or several separated by commas (run one after another in "
                        "this process, one RESULT line each: the smoke run's way of starting fewer processes).")
    p.add_argument("--library", default="ours",
                   help="ours, keras_hub or transformers; or several separated by commas, timed in turn in this "
                        f"process (`interleaved`; workloads {sorted(STEPS)} only).")
    p.add_argument("--size", default="bert_base", choices=sorted(SIZES))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--examples", type=int, default=256, help="epoch: examples per epoch")
    p.add_argument("--predictions", type=int, default=20, help="pretrain: masked positions per sequence")
    p.add_argument("--policy", default="float32", choices=("float32", "mixed_bfloat16"),
                   help="pretrain: the dtype policy (transformers: torch.autocast to bfloat16 for mixed_bfloat16)")
    p.add_argument("--steps_per_execution", type=int, default=10,
                   help="pretrain_fit: the steps of one fit call (Keras' steps_per_execution)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    workloads = args.workload.split(",")
    libraries = args.library.split(",")
    unknown = [w for w in workloads if w not in WORKLOADS] + [
        lib for lib in libraries if split_library(lib)[0] not in ("ours", "keras_hub", "transformers", *OURS_VARIANTS)
        or (split_library(lib)[1] and split_library(lib)[0] != "ours")]
    if unknown:
        p.error(f"unknown workload(s) or library(ies) {unknown}; workloads {sorted(WORKLOADS)}, libraries "
                f"ours (or ours@operation=path@...), keras_hub, transformers and (pretrain) {', '.join(OURS_VARIANTS)}")
    if len(libraries) > 1 and any(w not in STEPS for w in workloads):
        p.error(f"several libraries are timed in turn for {sorted(STEPS)} only, not {workloads}")
    if libraries != ["transformers"]:
        import keras

    for workload in workloads:
        if len(libraries) > 1:
            all_times = interleaved(workload, libraries, args)
        else:
            if libraries[0] != "transformers":
                keras.utils.set_random_seed(0)
            all_times = None
        for library in libraries:
            if all_times is None:
                args.library, paths = split_library(library)
                result = _with_cpu_paths(paths, lambda: WORKLOADS[workload](args))()
                args.library = library
            else:
                result = {"times": all_times[library], "interleaved_with": [lib for lib in libraries if lib != library]}
            backend = "torch" if library == "transformers" else keras.backend.backend()
            if workload == "pretrain_fit":  # a timed unit is one fit call of --steps_per_execution steps
                result.update(times=[t / args.steps_per_execution for t in result["times"]],
                              steps_per_call=args.steps_per_execution,
                              steps_per_execution=1 if backend == "torch" else args.steps_per_execution)
            # peak_rss_mb is the process's peak so far: with several workloads or libraries in one process, the
            # largest of them.
            result.update(workload=workload, library=library, backend=backend, size=args.size, batch=args.batch,
                          seq=args.seq, median_s=statistics.median(result["times"]),
                          peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          **({} if library == "transformers" else cpu_record(library, backend)))
            if "float32_times" in result:
                result["float32_median_s"] = statistics.median(result["float32_times"])
            print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
