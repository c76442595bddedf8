"""ALBERT encoder speed and memory: albert_tf against keras-hub and tf-models-official on this machine.

One command measures, with the implementations interleaved round by round under the same thread settings:

* encoder inference sequences/s (batch 8 by default) for each size, sequence length, `tf.function` mode
  (`graph`: plain `tf.function`; `xla`: `tf.function(jit_compile=True)`) and precision (`float32`,
  `mixed_bfloat16`);
* a training step (forward + backward + Adam update) on a 2-way classification loss over `pooled_output`;
* the peak RSS of each implementation, each in a fresh process (build, one inference, one training step);
* the achieved GFLOP/s from the analytic FLOP count, beside the float32 and bfloat16 matmul peaks measured
  here in the same rounds.
* the float32 matmul-only ceiling of each size and length: one forward's matmul ops, each timed alone the way
  the peak is (`matmul_ceiling`).

albert_tf and keras-hub's `AlbertBackbone` (both Keras 3) run in this process; tf-models-official's
`AlbertEncoder` (tf_keras) runs in a worker subprocess whose environment alone has `TF_USE_LEGACY_KERAS=1`.
The worker stays alive across rounds and is driven step by step, so no two measurements ever overlap.

All models use random weights and no dropout (the v2 configurations). Results (medians over rounds and
ratios) are printed and written as markdown to `--output` (default `benchmarks/RESULTS.md`).

Quick run (albert-base, seq 128, two rounds)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=base --seq_lens=128 --rounds=2

Full run (what RESULTS.md holds)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=base,large --seq_lens=128,512 --rounds=3
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

WORKER_FLAG = "--_worker"
PROTOCOL_PREFIX = "@@BENCH "
IMPLS = ("albert_tf", "keras_hub", "tfm")
IMPL_TITLES = {"albert_tf": "albert_tf", "keras_hub": "keras-hub AlbertBackbone",
               "tfm": "tf-models-official AlbertEncoder"}
SIZES = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xlarge": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
}
COMMON = dict(vocab_size=30000, embedding_size=128, max_position_embeddings=512, type_vocab_size=2)
MODES = ("graph", "xla")
PRECISIONS = ("float32", "mixed_bfloat16")
# Matmul shapes for the peak: every dense matmul of base and large (Q/K/V/output projections, FFN in, FFN out)
# at 4096 tokens (batch 8 x seq 512), so the peak is what this machine reaches on the shapes the model runs.
PEAK_SHAPES = ((4096, 768, 768), (4096, 768, 3072), (4096, 3072, 768),
               (4096, 1024, 1024), (4096, 1024, 4096), (4096, 4096, 1024))


# ----------------------------------------------------------------------------------------------------------
# FLOP count.


def encoder_flops(size, seq_len):
    """Analytic multiply-add FLOPs (2 per MAC) of one encoder forward pass over one sequence.

    Embedding projection, Q/K/V/output projections, attention scores and context, the two FFN matmuls and
    the pooler; embedding gathers, LayerNorm, softmax and activations are not counted.
    """
    s = SIZES[size]
    h, i, e, t = s["hidden_size"], s["intermediate_size"], COMMON["embedding_size"], seq_len
    per_layer = 2 * t * h * 3 * h + 2 * 2 * t * t * h + 2 * t * h * h + 2 * 2 * t * h * i
    return 2 * t * e * h + s["num_hidden_layers"] * per_layer + 2 * h * h


def train_flops(size, seq_len):
    """Forward + backward = 3x the forward FLOPs (the optimizer update is not counted)."""
    return 3 * encoder_flops(size, seq_len)


# ----------------------------------------------------------------------------------------------------------
# Runtime helpers (shared by this process and the tf-models worker).


def configure_threads(tf, intra_op_threads, inter_op_threads):
    tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads)
    tf.config.threading.set_inter_op_parallelism_threads(inter_op_threads)


def peak_rss_mib():
    """VmHWM of this process in MiB (Linux), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def random_batch(batch_size, seq_len, seed=0):
    """Ids, a mask with some padding in half the rows, two segments."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, COMMON["vocab_size"], size=(batch_size, seq_len)).astype(np.int32)
    mask = np.ones((batch_size, seq_len), np.int32)
    mask[batch_size // 2:, seq_len * 3 // 4:] = 0
    segments = np.zeros((batch_size, seq_len), np.int32)
    segments[:, seq_len // 2:] = 1
    labels = rng.integers(0, 2, size=(batch_size,)).astype(np.int32)
    return ids, mask, segments, labels


class Runner:
    """Builds one implementation's models and `tf.function`s, and times them.

    Args:
        impl: one of `IMPLS`.
        batch_size: int.
    """

    def __init__(self, impl, batch_size):
        import tensorflow as tf

        self.tf = tf
        self.impl = impl
        self.batch_size = batch_size
        self.models = {}
        self.functions = {}

    # --- Models ------------------------------------------------------------------------------------------

    def model(self, size, precision):
        key = (size, precision)
        if key not in self.models:
            self.models[key] = getattr(self, f"_build_{self.impl}")(size, precision)
        return self.models[key]

    def _build_albert_tf(self, size, precision):
        from albert_tf import AlbertConfig, AlbertModel

        config = AlbertConfig.from_dict(dict(COMMON, **SIZES[size], num_hidden_groups=1, inner_group_num=1,
                                             hidden_act="gelu", hidden_dropout_prob=0.0,
                                             attention_probs_dropout_prob=0.0, initializer_range=0.02))
        model = AlbertModel(config, dtype=precision)

        def forward(ids, mask, segments, training):
            out = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments}, training=training)
            return out["sequence_output"], out["pooled_output"]

        return model, forward

    def _build_keras_hub(self, size, precision):
        import keras_hub

        s = SIZES[size]
        model = keras_hub.models.AlbertBackbone(
            vocabulary_size=COMMON["vocab_size"], num_layers=s["num_hidden_layers"],
            num_heads=s["num_attention_heads"], embedding_dim=COMMON["embedding_size"],
            hidden_dim=s["hidden_size"], intermediate_dim=s["intermediate_size"], num_groups=1,
            num_inner_repetitions=1, dropout=0.0, max_sequence_length=COMMON["max_position_embeddings"],
            num_segments=COMMON["type_vocab_size"], dtype=precision)

        def forward(ids, mask, segments, training):
            out = model({"token_ids": ids, "padding_mask": mask, "segment_ids": segments}, training=training)
            return out["sequence_output"], out["pooled_output"]

        return model, forward

    def _build_tfm(self, size, precision):
        import tf_keras
        from official.nlp.modeling.networks import albert_encoder

        s = SIZES[size]
        tf_keras.mixed_precision.set_global_policy(precision)
        try:
            model = albert_encoder.AlbertEncoder(
                vocab_size=COMMON["vocab_size"], embedding_width=COMMON["embedding_size"],
                hidden_size=s["hidden_size"], num_layers=s["num_hidden_layers"],
                num_attention_heads=s["num_attention_heads"],
                max_sequence_length=COMMON["max_position_embeddings"],
                type_vocab_size=COMMON["type_vocab_size"], intermediate_size=s["intermediate_size"],
                dropout_rate=0.0, attention_dropout_rate=0.0, dict_outputs=True)
        finally:
            tf_keras.mixed_precision.set_global_policy("float32")

        def forward(ids, mask, segments, training):
            out = model({"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments},
                        training=training)
            return out["sequence_output"], out["pooled_output"]

        return model, forward

    def _optimizer(self):
        if self.impl == "tfm":
            import tf_keras
            return tf_keras.optimizers.Adam(1e-5)
        import keras
        return keras.optimizers.Adam(1e-5)

    # --- Functions -----------------------------------------------------------------------------------------

    def function(self, task, size, precision, mode):
        """`task` is `infer` or `train`; returns a `tf.function` of `(ids, mask, segments, labels)`."""
        tf = self.tf
        key = (task, size, precision, mode)
        if key in self.functions:
            return self.functions[key]
        model, forward = self.model(size, precision)
        jit = mode == "xla"
        if task == "infer":
            @tf.function(jit_compile=jit, reduce_retracing=True)
            def fn(ids, mask, segments, labels):
                del labels
                sequence, pooled = forward(ids, mask, segments, False)
                return tf.reduce_sum(tf.cast(sequence[:, 0], tf.float32)) + tf.reduce_sum(
                    tf.cast(pooled, tf.float32))
        else:
            # The optimizer slots live per model; one optimizer per (size, precision, mode) is fine: each
            # training function gets its own model state only through the model's variables.
            optimizer = self._optimizer()
            variables = model.trainable_variables
            if hasattr(optimizer, "build"):
                optimizer.build(variables)
            hidden = SIZES[size]["hidden_size"]
            projection = tf.constant(np.random.default_rng(1).normal(0, 0.02, (hidden, 2)), tf.float32)

            @tf.function(jit_compile=jit, reduce_retracing=True)
            def fn(ids, mask, segments, labels):
                with tf.GradientTape() as tape:
                    _, pooled = forward(ids, mask, segments, True)
                    logits = tf.matmul(tf.cast(pooled, tf.float32), projection)
                    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
                grads = tape.gradient(loss, variables)
                optimizer.apply_gradients(zip(grads, variables))
                return loss
        self.functions[key] = fn
        return fn

    def measure(self, task, size, precision, mode, seq_len, iters):
        """Times `iters` calls after one untimed call; returns `{"seq_per_s", "first_call_s"}` or an error."""
        tf = self.tf
        ids, mask, segments, labels = (tf.constant(a) for a in random_batch(self.batch_size, seq_len))
        try:
            fn = self.function(task, size, precision, mode)
            start = time.perf_counter()
            value = fn(ids, mask, segments, labels).numpy()      # Trace/compile on the first round.
            first = time.perf_counter() - start
            if not np.isfinite(value):
                raise FloatingPointError(f"non-finite output {value}")
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(iters):
                value = fn(ids, mask, segments, labels)
            value.numpy()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        except Exception as e:  # A peer failing one configuration (e.g. under XLA) is a result, not a crash.
            lines = [line.strip() for line in str(e).splitlines() if line.strip()]
            return {"error": f"{type(e).__name__}: {(lines[-1] if lines else '')[:200]}"}
        # CPU seconds of this process: on a shared machine they move much less with the load than wall time.
        return {"seq_per_s": self.batch_size * iters / elapsed,
                "seq_per_cpu_s": self.batch_size * iters / cpu, "first_call_s": first}


def matmul_peaks(tf, dtypes=("float32", "bfloat16"), min_seconds=0.5):
    """Best GFLOP/s of a plain `tf.matmul` over `PEAK_SHAPES` per dtype (graph mode), by wall and CPU time.

    Each shape is timed as `_rate` times an op: repeated in a loop inside one `tf.function` call, so the
    Python call and a fresh output buffer per call are not counted (timing one matmul per call, as before
    session 3, read 10-20% low on the 768-wide shapes).

    Returns `{dtype: wall GFLOP/s, dtype + "_cpu": GFLOP per CPU-second of this process}`.
    """
    peaks = {}
    for dtype in dtypes:
        best, best_cpu = 0.0, 0.0
        for m, k, n in PEAK_SHAPES:
            rng = np.random.default_rng(0)
            a = tf.cast(tf.constant(rng.normal(size=(m, k)).astype(np.float32)), dtype)
            b = tf.cast(tf.constant(rng.normal(size=(k, n)).astype(np.float32)), dtype)
            wall, cpu = _rate(tf, tf.matmul, (a, b), 2.0 * m * k * n, min_seconds, with_cpu=True)
            best, best_cpu = max(best, wall), max(best_cpu, cpu)
        peaks[dtype], peaks[dtype + "_cpu"] = best, best_cpu
    return peaks


def _rate(tf, fn, args, flops, min_seconds, repeats=8, with_cpu=False):
    """Best-of-3 GFLOP/s of the op `fn(*args)`, each try running for `min_seconds / 3`.

    The op runs `repeats` times per call, in a `tf.while_loop` inside one `tf.function`, so that the Python
    call and the fetch are not counted against small ops; each repetition's last operand depends on the loop
    counter (`+ 0 * i`, a pass over the small weight-like operand) so grappler cannot hoist the op out.
    With `with_cpu`, returns `(wall GFLOP/s, GFLOP per CPU-second of this process)`.
    """
    def looped(*xs):
        def body(i, acc):
            last = xs[-1] + tf.cast(i, xs[-1].dtype) * 0.0
            y = fn(*xs[:-1], last)
            return i + 1, acc + tf.cast(tf.reshape(y, [-1])[0], tf.float32)
        return tf.while_loop(lambda i, acc: i < repeats, body, (tf.constant(0), tf.constant(0.0)))[1]

    run = tf.function(looped)
    run(*args).numpy()
    best, best_cpu = 0.0, 0.0
    for _ in range(3):
        iters, start, cpu_start = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < min_seconds / 3:
            run(*args).numpy()
            iters += 1
        work = flops * repeats * iters / 1e9
        best = max(best, work / (time.perf_counter() - start))
        best_cpu = max(best_cpu, work / max(time.process_time() - cpu_start, 1e-9))
    return (best, best_cpu) if with_cpu else best


def matmul_ceiling(tf, size, seq_len, batch_size, min_seconds=0.6):
    """The float32 GFLOP/s an encoder forward would reach if it were only its matmuls, each at the rate oneDNN
    reaches on it alone here: `sum(flops) / sum(flops_i / rate_i)` over one forward's matmul ops.

    The ops and shapes are the model's (batch x seq tokens): the embedding projection, Q/K/V/output
    projections with bias, FFN-in with bias and tanh-GELU (fused into the matmul by oneDNN), FFN-out with
    bias, and the attention score and context batch matmuls, these in whole-batch and in the 32 MiB slices
    albert_tf uses at long sequences (the faster of the two). LayerNorm, softmax, the mask, transposes and
    gathers count for nothing: an estimate of the best an implementation built from these ops can do (in a
    whole model the same ops can run a few percent faster or slower than alone: cache state, buffer reuse).

    Returns `{"gflops": ceiling, "ops": {name: GFLOP/s}}`.
    """
    s = SIZES[size]
    h, i, e, n = s["hidden_size"], s["intermediate_size"], COMMON["embedding_size"], s["num_attention_heads"]
    d, t, layers = h // n, batch_size * seq_len, s["num_hidden_layers"]
    rng = np.random.default_rng(0)

    def rand(*shape):
        return tf.constant(rng.normal(size=shape).astype(np.float32))

    def dense(activation=None):
        def fn(x, b, w):
            y = tf.nn.bias_add(tf.matmul(x, w), b)
            return tf.nn.gelu(y, approximate=True) if activation == "gelu" else y
        return fn

    ops = {   # name: (GFLOP/s, FLOPs per forward)
        "embedding projection": (_rate(tf, dense(), (rand(t, e), rand(h), rand(e, h)), 2 * t * e * h, min_seconds),
                                 2 * t * e * h),
        "Q/K/V/output projection": (_rate(tf, dense(), (rand(t, h), rand(h), rand(h, h)), 2 * t * h * h,
                                          min_seconds), 4 * layers * 2 * t * h * h),
        "FFN in + GELU": (_rate(tf, dense("gelu"), (rand(t, h), rand(i), rand(h, i)), 2 * t * h * i, min_seconds),
                          layers * 2 * t * h * i),
        "FFN out": (_rate(tf, dense(), (rand(t, i), rand(h), rand(i, h)), 2 * t * h * i, min_seconds),
                    layers * 2 * t * h * i),
    }
    per_example = n * seq_len * seq_len * 4
    chunk = max(1, min(batch_size, (32 * 1024 * 1024) // per_example))
    for name, make in (("attention scores", lambda b: (rand(b, n, seq_len, d), rand(b, n, seq_len, d))),
                       ("attention context", lambda b: (rand(b, n, seq_len, seq_len), rand(b, n, seq_len, d)))):
        scores = name == "attention scores"
        fn = lambda x, y, scores=scores: tf.matmul(x, y, transpose_b=scores)  # noqa: E731
        rate = max(_rate(tf, fn, make(b), 2 * b * n * seq_len * seq_len * d, min_seconds)
                   for b in sorted({batch_size, chunk}))
        ops[name] = (rate, layers * 2 * batch_size * n * seq_len * seq_len * d)
    total = sum(flops for _, flops in ops.values())
    seconds = sum(flops / (rate * 1e9) for rate, flops in ops.values())
    return {"gflops": total / seconds / 1e9, "ops": {name: rate for name, (rate, _) in ops.items()}}


# ----------------------------------------------------------------------------------------------------------
# The tf-models-official worker: a subprocess driven over stdin/stdout.


def worker_main(argv):
    """`bench_encoder.py --_worker IMPL BATCH INTRA INTER`: reads JSON commands, answers prefixed JSON lines."""
    impl, batch_size, intra, inter = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    import tensorflow as tf

    configure_threads(tf, intra, inter)
    runner = Runner(impl, batch_size)
    send({"ready": True})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "measure":
            send(runner.measure(cmd["task"], cmd["size"], cmd["precision"], cmd["mode"], cmd["seq_len"],
                                cmd["iters"]))
        elif cmd["cmd"] == "rss":
            result = {}
            for seq_len in cmd["seq_lens"]:
                result[f"infer_{seq_len}"] = runner.measure("infer", cmd["size"], "float32", "graph",
                                                            seq_len, 1)
            if cmd["train_seq_len"]:
                result["train"] = runner.measure("train", cmd["size"], "float32", "graph",
                                                 cmd["train_seq_len"], 1)
            result["peak_rss_mib"] = peak_rss_mib()
            send(result)


def send(obj):
    sys.stdout.write(PROTOCOL_PREFIX + json.dumps(obj) + "\n")
    sys.stdout.flush()


class Worker:
    """A persistent subprocess running `Runner(impl)`; `legacy_keras` sets TF_USE_LEGACY_KERAS=1 in it only."""

    def __init__(self, impl, batch_size, intra, inter, legacy_keras):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
        if legacy_keras:
            env["TF_USE_LEGACY_KERAS"] = "1"
        else:
            env.pop("TF_USE_LEGACY_KERAS", None)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), WORKER_FLAG, impl, str(batch_size), str(intra),
             str(inter)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.impl = impl
        ready = self._read()
        if not ready.get("ready"):
            raise RuntimeError(f"worker {impl} did not start: {ready}")

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL_PREFIX):
                return json.loads(line[len(PROTOCOL_PREFIX):])
        raise RuntimeError(f"worker {self.impl} exited with code {self.proc.wait()}")

    def call(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            self.proc.wait(timeout=60)


# ----------------------------------------------------------------------------------------------------------
# The benchmark.


def run_benchmark(sizes, seq_lens, modes, precisions, impls, rounds, batch_size, iters, train_seq_len,
                  train_modes, train_precisions, intra_op_threads, inter_op_threads, measure_rss, log,
                  mixed_modes=MODES, on_round=None, ceilings=True):
    """Runs every measurement `rounds` times, interleaving implementations; returns the raw results dict.

    Args:
        sizes: list of `SIZES` keys.
        seq_lens: list of int, inference sequence lengths.
        modes: list of `MODES`, inference `tf.function` modes.
        precisions: list of `PRECISIONS`, inference dtype policies.
        impls: list of `IMPLS`.
        rounds: int, repetitions of the whole schedule (medians are taken over them).
        batch_size: int.
        iters: dict seq_len -> int, timed calls per measurement.
        train_seq_len: int or 0 (no training step).
        train_modes: list of `MODES` for the training step.
        train_precisions: list of `PRECISIONS` for the training step.
        intra_op_threads, inter_op_threads: int, TF thread pools in every process.
        measure_rss: bool, also measure each implementation's peak RSS in a fresh process.
        log: callable(str) for progress.
        mixed_modes: the subset of `modes` (and `train_modes`) also run with `mixed_bfloat16`.
        on_round: optional callable(results) after each round (e.g. to write partial tables).
        ceilings: bool, also measure `matmul_ceiling` of each float32 size and sequence length every round.
    """
    import tensorflow as tf

    configure_threads(tf, intra_op_threads, inter_op_threads)
    runners, workers = {}, {}
    for impl in impls:
        if impl == "tfm":
            workers[impl] = Worker(impl, batch_size, intra_op_threads, inter_op_threads, legacy_keras=True)
        else:
            runners[impl] = Runner(impl, batch_size)

    def measure(impl, **kw):
        if impl in workers:
            return workers[impl].call(cmd="measure", **kw)
        return runners[impl].measure(**kw)

    schedule = []
    for size in sizes:
        for seq_len in seq_lens:
            for precision in precisions:
                for mode in modes:
                    if precision != "float32" and mode not in mixed_modes:
                        continue
                    schedule.append(dict(task="infer", size=size, precision=precision, mode=mode,
                                         seq_len=seq_len, iters=iters.get(seq_len, 2)))
        if train_seq_len:
            for precision in train_precisions:
                for mode in train_modes:
                    if precision != "float32" and mode not in mixed_modes:
                        continue
                    schedule.append(dict(task="train", size=size, precision=precision, mode=mode,
                                         seq_len=train_seq_len, iters=iters.get(train_seq_len, 2)))

    results = {"measurements": [], "peaks": [], "load": []}
    started = time.time()
    try:
        for r in range(rounds):
            results["load"].append(os.getloadavg()[0])
            results["peaks"].append(matmul_peaks(tf))
            log(f"round {r + 1}/{rounds}: matmul peaks {results['peaks'][-1]} GFLOP/s, "
                f"load {results['load'][-1]:.2f}")
            if ceilings:
                results.setdefault("ceilings", []).append(
                    {f"{size}/{seq_len}": matmul_ceiling(tf, size, seq_len, batch_size)
                     for size in sizes for seq_len in seq_lens if "float32" in precisions})
                log(f"round {r + 1}/{rounds}: float32 matmul-only ceilings "
                    + ", ".join(f"{k} {v['gflops']:.0f}" for k, v in results["ceilings"][-1].items()) + " GFLOP/s")
            for i, item in enumerate(schedule):
                # Rotate the order each round and item so no implementation always runs first.
                order = impls[(r + i) % len(impls):] + impls[:(r + i) % len(impls)]
                for impl in order:
                    res = measure(impl, **item)
                    results["measurements"].append(dict(item, impl=impl, round=r, **res))
                    log(f"round {r + 1} {impl:9s} {item['task']} {item['size']} seq {item['seq_len']} "
                        f"{item['precision']} {item['mode']}: "
                        + (f"{res['seq_per_s']:.2f} seq/s" if "seq_per_s" in res else res["error"])
                        + f"  ({time.time() - started:.0f}s elapsed)")
            results["load"].append(os.getloadavg()[0])
            if on_round is not None:
                results["wall_s"] = time.time() - started
                on_round(dict(results, rss={}))
        results["peaks"].append(matmul_peaks(tf))
    finally:
        for worker in workers.values():
            worker.close()

    results["rss"] = {}
    if measure_rss:
        for size in sizes:
            for impl in impls:
                worker = Worker(impl, batch_size, intra_op_threads, inter_op_threads,
                                legacy_keras=impl == "tfm")
                try:
                    res = worker.call(cmd="rss", size=size, seq_lens=[max(seq_lens)],
                                      train_seq_len=train_seq_len)
                finally:
                    worker.close()
                results["rss"][f"{impl}/{size}"] = res.get("peak_rss_mib")
                log(f"peak RSS {impl} {size}: {res.get('peak_rss_mib', 0):.0f} MiB")
    results["wall_s"] = time.time() - started
    return results


def median_table(results, metric="seq_per_s"):
    """(task, size, seq_len, precision, mode) -> impl -> median of `metric` (an error string if none)."""
    table = {}
    for m in results["measurements"]:
        key = (m["task"], m["size"], m["seq_len"], m["precision"], m["mode"])
        table.setdefault(key, {}).setdefault(m["impl"], []).append(m.get(metric, m.get("error")))
    out = {}
    for key, per_impl in table.items():
        out[key] = {}
        for impl, values in per_impl.items():
            numbers = [v for v in values if isinstance(v, float)]
            out[key][impl] = statistics.median(numbers) if numbers else str(values[0])
    return out


def _fmt(value, digits=2):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return "error"
    return f"{value:.{digits}f}"


def render_markdown(results, settings):
    """The RESULTS.md text: settings, peaks, the table of medians and ratios, targets, RSS, errors."""
    med = median_table(results)
    peak32 = statistics.median(p["float32"] for p in results["peaks"])
    peak16 = statistics.median(p["bfloat16"] for p in results["peaks"])
    cpu32 = statistics.median(p["float32_cpu"] for p in results["peaks"])
    cpu16 = statistics.median(p["bfloat16_cpu"] for p in results["peaks"])
    impls = settings["impls"]
    lines = [
        f"# Encoder benchmark ({settings['date']})",
        "",
        f"Command: `{settings['command']}`",
        "",
        f"Machine: {settings['machine']}; TensorFlow {settings['tf_version']}, Keras {settings['keras_version']}; "
        f"intra-op threads {settings['intra']}, inter-op threads {settings['inter']}; batch {settings['batch']}; "
        f"{len({m['round'] for m in results['measurements']})} interleaved rounds, medians. Random weights, "
        "no dropout, v2 configurations (E=128, vocab 30000). Load average (1 min) during the rounds: "
        f"min {min(results['load']):.2f}, median {statistics.median(results['load']):.2f}, "
        f"max {max(results['load']):.2f} (the machine is shared; numbers are noisy). Wall time "
        f"{results['wall_s'] / 60:.1f} min.",
        "",
        f"Measured matmul peak (best of {', '.join('x'.join(map(str, s)) for s in PEAK_SHAPES)}, median over "
        f"rounds): float32 **{peak32:.0f} GFLOP/s**, bfloat16 **{peak16:.0f} GFLOP/s** "
        f"({peak16 / peak32:.2f}x); per CPU-second of the process: float32 **{cpu32:.0f}**, bfloat16 "
        f"**{cpu16:.0f}** GFLOP/cpu-s ({cpu16 / cpu32:.2f}x).",
        "",
        "Sequences per second (higher is better). `graph` = `tf.function`, `xla` = `tf.function(jit_compile=True)`; "
        "GFLOP/s and % of peak are albert_tf's, from the analytic FLOP count (training = 3x forward) against the "
        "peak of the same precision (bfloat16 peak for `mixed_bfloat16`).",
        "",
    ]
    lines += render_rows(med, impls, peak32, peak16)
    ceilings = median_ceilings(results)
    if ceilings:
        names = list(next(iter(ceilings.values()))["ops"])
        lines += ["", "## Matmul-only ceiling (float32)", "",
                  "What a forward pass would reach if it were nothing but its matmuls, each at the rate oneDNN "
                  "reaches on that op alone here (`matmul_ceiling`, timed like the peak; medians over rounds): "
                  "an estimate of the best an implementation built from these ops can do, since LayerNorm, "
                  "softmax, the mask, transposes and gathers count for nothing in it. GFLOP/s per op, the "
                  "ceiling, the ceiling as % of the matmul peak, and albert_tf's best float32 inference as % of "
                  "the ceiling.", "",
                  "| size | seq | " + " | ".join(names) + " | ceiling | ceiling / peak | albert_tf / ceiling |",
                  "|---|---|" + "---|" * (len(names) + 3)]
        for (size, seq_len), c in sorted(ceilings.items(), key=lambda kv: (list(SIZES).index(kv[0][0]), kv[0][1])):
            ours = _best(med, "infer", size, seq_len, "float32", "albert_tf")
            achieved = (f"{100 * ours * encoder_flops(size, seq_len) / 1e9 / c['gflops']:.0f}%"
                        if ours else "n/a")
            lines.append(f"| {size} | {seq_len} | " + " | ".join(f"{c['ops'][n]:.0f}" for n in names)
                         + f" | {c['gflops']:.0f} | {100 * c['gflops'] / peak32:.0f}% | {achieved} |")
    lines += ["", "Sequences per CPU-second of each implementation's own process (`time.process_time`): less "
              "sensitive to the other jobs on a shared machine than wall time; same medians and ratios, GFLOP "
              "per CPU-second against the matmul peak per CPU-second.", ""]
    lines += render_rows(median_table(results, "seq_per_cpu_s"), impls, cpu32, cpu16, unit="GFLOP/cpu-s")
    lines += ["", "## Targets of issue 11", ""]
    lines += render_targets(med, peak32, impls, "wall time", ceilings)
    lines += [""]
    lines += render_targets(median_table(results, "seq_per_cpu_s"), cpu32, impls, "CPU time")
    if results.get("rss"):
        lines += ["", "## Peak RSS", "",
                  "Each implementation alone in a fresh process: build, one float32 `graph` inference at "
                  f"seq {max(settings['seq_lens'])}" + (f", one training step at seq {settings['train_seq_len']}"
                                                        if settings["train_seq_len"] else "") + ".", "",
                  "| size | " + " | ".join(IMPL_TITLES[i] for i in impls) + " |",
                  "|---|" + "---|" * len(impls)]
        for size in settings["sizes"]:
            lines.append(f"| {size} | " + " | ".join(
                _fmt(results["rss"].get(f"{i}/{size}"), 0) + " MiB" for i in impls) + " |")
    errors = sorted({(m["impl"], m["task"], m["size"], m["seq_len"], m["precision"], m["mode"], m["error"])
                     for m in results["measurements"] if "error" in m})
    if errors:
        lines += ["", "## Failures", ""]
        lines += [f"- {e[0]} {e[1]} {e[2]} seq {e[3]} {e[4]} {e[5]}: `{e[6]}`" for e in errors]
    return "\n".join(lines) + "\n"


def render_rows(med, impls, peak32, peak16, unit="GFLOP/s"):
    """Markdown rows: medians per implementation, albert_tf's ratios, GFLOP/s and % of peak (if peaks)."""
    lines = []
    with_peak = peak32 is not None
    header = ["task", "size", "seq", "precision", "mode"] + [IMPL_TITLES[i] for i in impls]
    others = [i for i in impls if i != "albert_tf"]
    if "albert_tf" in impls:
        header += [f"albert_tf / {i}" for i in others]
        header += [f"albert_tf {unit}", "% of peak"] if with_peak else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for key in sorted(med, key=lambda k: (k[0], list(SIZES).index(k[1]), k[2], k[3], k[4])):
        task, size, seq_len, precision, mode = key
        row = [task, size, str(seq_len), precision, mode] + [_fmt(med[key].get(i)) for i in impls]
        ours = med[key].get("albert_tf")
        if "albert_tf" in impls:
            for other in others:
                theirs = med[key].get(other)
                ok = isinstance(ours, float) and isinstance(theirs, float)
                row.append(f"{ours / theirs:.2f}x" if ok else "n/a")
            flops = (train_flops if task == "train" else encoder_flops)(size, seq_len)
            if not with_peak:
                pass
            elif isinstance(ours, float):
                gflops = ours * flops / 1e9
                peak = peak32 if precision == "float32" else peak16
                row += [f"{gflops:.0f}", f"{100 * gflops / peak:.0f}%"]
            else:
                row += ["n/a", "n/a"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _best(med, task, size, seq_len, precision, impl):
    values = [med.get((task, size, seq_len, precision, mode), {}).get(impl) for mode in MODES]
    values = [v for v in values if isinstance(v, float)]
    return max(values) if values else None


def median_ceilings(results):
    """(size, seq_len) -> {"gflops": median ceiling, "ops": {name: median GFLOP/s}} over rounds ({} if none)."""
    per_key = {}
    for round_ceilings in results.get("ceilings", []):
        for key, c in round_ceilings.items():
            per_key.setdefault(key, []).append(c)
    out = {}
    for key, values in per_key.items():
        size, seq_len = key.split("/")
        out[(size, int(seq_len))] = {
            "gflops": statistics.median(v["gflops"] for v in values),
            "ops": {n: statistics.median(v["ops"][n] for v in values) for n in values[0]["ops"]}}
    return out


def render_targets(med, peak32, impls, basis, ceilings=None):
    """Each target of the issue with the measured value (best mode of each implementation); with `ceilings`,
    the peak target's row also gives the matmul-only ceiling as % of the peak."""
    if not {"albert_tf", "keras_hub"} <= set(impls):
        return ["(needs albert_tf and keras_hub in `--impls`)"]
    lines = [f"By {basis}; best `tf.function` mode of each implementation.", "",
             "| target | size | seq | measured | met |", "|---|---|---|---|---|"]
    keys = sorted({(k[1], k[2]) for k in med if k[0] == "infer"},
                  key=lambda k: (list(SIZES).index(k[0]), k[1]))
    for size, seq_len in keys:
        ours = _best(med, "infer", size, seq_len, "float32", "albert_tf")
        theirs = _best(med, "infer", size, seq_len, "float32", "keras_hub")
        if ours and theirs:
            lines.append(f"| float32 inference >= 1.05x keras-hub | {size} | {seq_len} | {ours / theirs:.2f}x | "
                         f"{'yes' if ours / theirs >= 1.05 else 'no'} |")
        if ours and seq_len >= 512 and peak32:
            frac = ours * encoder_flops(size, seq_len) / 1e9 / peak32
            ceiling = (ceilings or {}).get((size, seq_len))
            note = f" (matmul-only ceiling {100 * ceiling['gflops'] / peak32:.0f}%)" if ceiling else ""
            lines.append(f"| float32 inference >= 90% of fp32 matmul peak | {size} | {seq_len} | "
                         f"{100 * frac:.0f}%{note} | {'yes' if frac >= 0.9 else 'no'} |")
        bf16 = _best(med, "infer", size, seq_len, "mixed_bfloat16", "albert_tf")
        if bf16 and theirs:
            lines.append(f"| mixed_bfloat16 inference >= 1.5x keras-hub float32 | {size} | {seq_len} | "
                         f"{bf16 / theirs:.2f}x | {'yes' if bf16 / theirs >= 1.5 else 'no'} |")
    for size, seq_len in sorted({(k[1], k[2]) for k in med if k[0] == "train"}):
        ours = _best(med, "train", size, seq_len, "float32", "albert_tf")
        theirs = _best(med, "train", size, seq_len, "float32", "keras_hub")
        if ours and theirs:
            lines.append(f"| float32 training step >= 1.1x keras-hub | {size} | {seq_len} | {ours / theirs:.2f}x | "
                         f"{'yes' if ours / theirs >= 1.1 else 'no'} |")
    return lines


def write_atomic(path, text):
    # Imported here, not at the top: the tf-models-official worker runs this module under
    # TF_USE_LEGACY_KERAS=1, where importing albert_tf (Keras 3 models) must not happen.
    from albert_tf.fileio import write_text_atomic

    write_text_atomic(path, text)


def _parse_list(value, allowed, name):
    items = [v.strip() for v in value.split(",") if v.strip()]
    for item in items:
        if item not in allowed:
            raise ValueError(f"`--{name}` must be a comma-separated subset of {list(allowed)}. "
                             f"Received: `{value}`.")
    return items


def main(argv):
    from absl import flags, logging

    FLAGS = flags.FLAGS
    del argv
    sizes = _parse_list(FLAGS.sizes, SIZES, "sizes")
    modes = _parse_list(FLAGS.modes, MODES, "modes")
    precisions = _parse_list(FLAGS.precisions, PRECISIONS, "precisions")
    train_modes = _parse_list(FLAGS.train_modes, MODES, "train_modes")
    train_precisions = _parse_list(FLAGS.train_precisions, PRECISIONS, "train_precisions")
    impls = _parse_list(FLAGS.impls, IMPLS, "impls")
    try:
        seq_lens = [int(s) for s in FLAGS.seq_lens.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"`--seq_lens` must be comma-separated integers. Received: `{FLAGS.seq_lens}`.")
    if any(s < 2 or s > COMMON["max_position_embeddings"] for s in seq_lens):
        raise ValueError(f"`--seq_lens` must lie in [2, 512]. Received: `{FLAGS.seq_lens}`.")
    if FLAGS.rounds < 1:
        raise ValueError(f"`--rounds` must be >= 1. Received: `{FLAGS.rounds}`.")
    iters = {s: max(1, round(FLAGS.iters * 128 / s)) for s in set(seq_lens) | {FLAGS.train_seq_len} if s > 0}

    import keras
    import tensorflow as tf

    settings = dict(
        date=datetime.date.today().isoformat(), command="python benchmarks/bench_encoder.py " + " ".join(
            sys.argv[1:]), machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        tf_version=tf.__version__, keras_version=keras.__version__, intra=FLAGS.intra_op_threads,
        inter=FLAGS.inter_op_threads, batch=FLAGS.batch_size, rounds=FLAGS.rounds, impls=impls,
        seq_lens=seq_lens, sizes=sizes, train_seq_len=FLAGS.train_seq_len)

    def write(results, final):
        text = render_markdown(results, settings)
        if final:
            print(text)
        if FLAGS.output:
            stem = os.path.splitext(FLAGS.output)[0]
            write_atomic(FLAGS.output, text)
            write_atomic(stem + ".json", json.dumps(results, indent=1))
            logging.info("wrote %s%s", FLAGS.output, "" if final else " (partial: rounds so far)")

    results = run_benchmark(
        sizes, seq_lens, modes, precisions, impls, FLAGS.rounds, FLAGS.batch_size, iters,
        FLAGS.train_seq_len, train_modes, train_precisions, FLAGS.intra_op_threads, FLAGS.inter_op_threads,
        FLAGS.rss, logging.info, mixed_modes=_parse_list(FLAGS.mixed_modes, MODES, "mixed_modes"),
        on_round=lambda partial: write(partial, final=False), ceilings=FLAGS.ceiling)
    write(results, final=True)


def define_flags():
    from absl import flags

    flags.DEFINE_string("sizes", "base", "Comma-separated model sizes: base, large, xlarge.")
    flags.DEFINE_string("seq_lens", "128,512", "Comma-separated inference sequence lengths.")
    flags.DEFINE_string("modes", "graph,xla", "Inference modes: graph (tf.function), xla (jit_compile=True).")
    flags.DEFINE_string("precisions", "float32,mixed_bfloat16", "Inference dtype policies.")
    flags.DEFINE_string("mixed_modes", "graph", "Modes also run with mixed_bfloat16 (XLA on CPU does not use "
                        "the BF16/AMX matmul kernels, so `xla` there only measures a slow path).")
    flags.DEFINE_string("impls", ",".join(IMPLS), "Implementations: albert_tf, keras_hub, tfm.")
    flags.DEFINE_integer("rounds", 2, "Interleaved rounds; the table holds medians over them.")
    flags.DEFINE_integer("batch_size", 8, "Batch size.")
    flags.DEFINE_integer("iters", 4, "Timed calls per measurement at seq 128 (scaled by 128/seq).")
    flags.DEFINE_integer("train_seq_len", 128, "Sequence length of the training step; 0 skips training.")
    flags.DEFINE_string("train_modes", "graph,xla", "Training-step modes.")
    flags.DEFINE_string("train_precisions", "float32", "Training-step dtype policies.")
    flags.DEFINE_integer("intra_op_threads", os.cpu_count(), "TF intra-op threads in every process.")
    flags.DEFINE_integer("inter_op_threads", 1, "TF inter-op threads in every process.")
    flags.DEFINE_bool("rss", True, "Also measure each implementation's peak RSS in a fresh process.")
    flags.DEFINE_bool("ceiling", True, "Also measure the float32 matmul-only ceiling of each size and sequence "
                      "length every round (the model's matmul ops alone; see `matmul_ceiling`).")
    flags.DEFINE_string("output", os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"),
                        "Markdown output (raw results go beside it as .json); empty to only print.")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        worker_main(sys.argv[2:])
    else:
        from absl import app

        define_flags()
        app.run(main)
