r"""ALBERT encoder speed and memory: albert_tf against keras-hub and tf-models-official on this machine, under
both of TensorFlow's CPU backends (oneDNN on and off).

One command measures, with the implementations and oneDNN settings interleaved round by round under the same
thread settings:

* encoder inference sequences/s for each size, sequence length, `tf.function` mode (`graph`: plain
  `tf.function`; `xla`: `tf.function(jit_compile=True)`) and precision (`float32`, `mixed_bfloat16`), at
  `--batch_size` (8) and at batch 1 (`--batch1_seq_lens`, default seq 128);
* a training step (forward + backward + Adam update) on a 2-way classification loss over `pooled_output`, at
  `--train_batch_size` (default `--batch_size`) and `--train_seq_len`;
* the peak RSS of each implementation, each in a fresh process (build, one inference, one training step);
* the achieved GFLOP/s from the analytic FLOP count, beside the float32 and bfloat16 matmul peaks measured
  under each oneDNN setting in the same rounds;
* the float32 matmul-only ceiling of each float32 row (inference at both batch sizes, the training step): the
  call's matmul ops (for training, also their two backward forms), each timed alone the way the peak is
  (`matmul_ceiling`): an estimate of the best an implementation built from these ops can reach.

TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it loads, so every (implementation, oneDNN setting) runs
in its own persistent worker subprocess (`--onednn=both`: `TF_ENABLE_ONEDNN_OPTS=0` and `=1`; `0` or `1`: one
of them; `as_is`: the variable as this process has it); tf-models-official's `AlbertEncoder` (tf_keras) runs
in workers whose environment alone has `TF_USE_LEGACY_KERAS=1`. The workers stay alive across rounds and are
driven step by step from this process, which runs no TensorFlow work itself: no two measurements ever
overlap. Each setting's matmul peak and ceiling are measured in one of its own workers.

All models use random weights and no dropout (the v2 configurations). Results (medians over rounds, per
setting: albert_tf / keras-hub by the best mode of each, each implementation's % of the float32 matmul peak,
which setting is faster for each implementation) are printed and written as markdown to `--output` (default
`benchmarks/RESULTS.md`).

Smoke run (a tiny model, one round, a second or two per measurement; proves the workers and the tables)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=tiny --seq_lens=128 --impls=albert_tf,keras_hub \
      --modes=graph --precisions=float32 --train_modes=graph --rounds=1 --norss --noceiling --peak_seconds=0.05 \
      --peak_tokens=128 --output=

The issue's configurations under both settings (base: inference batch 8 at seq 128 and 512, batch 1 at 128,
training step batch 8 at 128)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=base --seq_lens=128,512 --rounds=3

albert-large's training step at batch 1, seq 512 (the one that runs only with oneDNN on here)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=large --seq_lens=512 --batch1_seq_lens= \
      --train_batch_size=1 --train_seq_len=512 --impls=albert_tf,keras_hub --rounds=2 --output=large_b1.md

Full run (what RESULTS.md holds)::

    .venv/bin/python benchmarks/bench_encoder.py --sizes=base,large --seq_lens=128,512 --rounds=3
"""

import datetime
import importlib.metadata
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
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),  # smoke runs
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xlarge": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
}
COMMON = dict(vocab_size=30000, embedding_size=128, max_position_embeddings=512, type_vocab_size=2)
MODES = ("graph", "xla")
# `--onednn` -> the settings measured: values of TF_ENABLE_ONEDNN_OPTS, or "as_is" (the variable as it is here).
ONEDNN_CHOICES = {"both": ("0", "1"), "0": ("0",), "1": ("1",), "as_is": ("as_is",)}
# Timed calls scale with the tokens of a call against this reference shape (batch 8, seq 128).
REFERENCE_TOKENS = 8 * 128
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
# Runtime helpers (run in the workers).


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
        batch_size: int, the batch of `measure` when it is given none.
    """

    def __init__(self, impl, batch_size=8):
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

    def function(self, task, size, precision, mode, batch_size=None):
        """`task` is `infer` or `train`; returns a `tf.function` of `(ids, mask, segments, labels)`.

        One function per batch size, so a batch-1 call does not retrace the batch-8 one with a relaxed shape.
        """
        tf = self.tf
        key = (task, size, precision, mode, batch_size or self.batch_size)
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

    def measure(self, task, size, precision, mode, seq_len, iters, batch_size=None):
        """Times `iters` calls after one untimed call; returns `{"seq_per_s", "first_call_s"}` or an error."""
        tf = self.tf
        batch_size = batch_size or self.batch_size
        ids, mask, segments, labels = (tf.constant(a) for a in random_batch(batch_size, seq_len))
        try:
            fn = self.function(task, size, precision, mode, batch_size)
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
        return {"seq_per_s": batch_size * iters / elapsed,
                "seq_per_cpu_s": batch_size * iters / cpu, "first_call_s": first}


def matmul_peaks(tf, dtypes=("float32", "bfloat16"), min_seconds=0.5, tokens=None):
    """Best GFLOP/s of a plain `tf.matmul` over `PEAK_SHAPES` per dtype (graph mode), by wall and CPU time.
    `tokens` replaces their rows (4096), e.g. for a quick smoke run.

    Each shape is timed as `_rate` times an op: repeated in a loop inside one `tf.function` call, so the
    Python call and a fresh output buffer per call are not counted (timing one matmul per call, as before
    session 3, read 10-20% low on the 768-wide shapes).

    Returns `{dtype: wall GFLOP/s, dtype + "_cpu": GFLOP per CPU-second of this process}`.
    """
    peaks = {}
    for dtype in dtypes:
        best, best_cpu = 0.0, 0.0
        for m, k, n in PEAK_SHAPES:
            m = tokens or m
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


def matmul_ceiling(tf, size, seq_len, batch_size, min_seconds=0.6, training=False):
    """The float32 GFLOP/s an encoder forward (with `training`, forward and backward) would reach if it were
    only its matmuls, each at the rate it reaches alone here: `sum(flops) / sum(flops_i / rate_i)` over the
    matmul ops of one call.

    The ops and shapes are the model's (batch x seq tokens): the embedding projection, Q/K/V/output
    projections with bias, FFN-in with bias and tanh-GELU (fused into the matmul by oneDNN), FFN-out with
    bias, and the attention score and context batch matmuls (the faster of whole-batch and 32 MiB slices).
    With `training`, each matmul also runs in the two forms of its backward pass (`dX = dY W^T`,
    `dW = X^T dY`, and likewise for the batch matmuls), each at its own rate: the bound of a training step
    built from these ops. LayerNorm, softmax, the mask, transposes, gathers and the optimizer count for
    nothing: an estimate of the best an implementation built from these ops can do (in a whole model the
    same ops can run a few percent faster or slower than alone: cache state, buffer reuse).

    Returns `{"gflops": ceiling, "ops": {name: GFLOP/s}}` (with `training`, an op's rate covers its three forms).
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

    def seconds_of(forms):
        """Seconds of one application of an op: the sum over its forms `(fn, args, flops)`."""
        return sum(flops / (_rate(tf, fn, args, flops, min_seconds) * 1e9) for fn, args, flops in forms)

    def dense_forms(rows, k, m, activation=None):
        forms = [(dense(activation), (rand(rows, k), rand(m), rand(k, m)), 2 * rows * k * m)]
        if training:
            forms += [(lambda dy, w: tf.matmul(dy, w, transpose_b=True), (rand(rows, m), rand(k, m)), 2 * rows * k * m),
                      (lambda x, dy: tf.matmul(x, dy, transpose_a=True), (rand(rows, k), rand(rows, m)),
                       2 * rows * k * m)]
        return forms

    ops = {}   # name: (seconds of one application, FLOPs of one application, applications per call)
    for name, (k, m, activation, count) in {
            "embedding projection": (e, h, None, 1), "Q/K/V/output projection": (h, h, None, 4 * layers),
            "FFN in + GELU": (h, i, "gelu", layers), "FFN out": (i, h, None, layers)}.items():
        forms = dense_forms(t, k, m, activation)
        ops[name] = (seconds_of(forms), sum(f for _, _, f in forms), count)
    per_example = n * seq_len * seq_len * 4
    chunk = max(1, min(batch_size, (32 * 1024 * 1024) // per_example))
    for name in ("attention scores", "attention context"):
        best = None
        for b in sorted({batch_size, chunk}):
            flops = 2 * b * n * seq_len * seq_len * d
            small, big = (lambda: rand(b, n, seq_len, d)), (lambda: rand(b, n, seq_len, seq_len))
            if name == "attention scores":        # S = Q K^T; dQ = dS K, dK = dS^T Q
                forms = [(lambda x, y: tf.matmul(x, y, transpose_b=True), (small(), small()), flops)]
                back = [(tf.matmul, (big(), small()), flops),
                        (lambda x, y: tf.matmul(x, y, transpose_a=True), (big(), small()), flops)]
            else:                                  # C = P V; dP = dC V^T, dV = P^T dC
                forms = [(tf.matmul, (big(), small()), flops)]
                back = [(lambda x, y: tf.matmul(x, y, transpose_b=True), (small(), small()), flops),
                        (lambda x, y: tf.matmul(x, y, transpose_a=True), (big(), small()), flops)]
            forms += back if training else []
            per_batch = seconds_of(forms) * batch_size / b
            best = per_batch if best is None else min(best, per_batch)
        work = (3 if training else 1) * 2 * batch_size * n * seq_len * seq_len * d
        ops[name] = (best, work, layers)
    total = sum(flops * count for _, flops, count in ops.values())
    seconds = sum(sec * count for sec, _, count in ops.values())
    return {"gflops": total / seconds / 1e9, "ops": {name: flops / sec / 1e9 for name, (sec, flops, _) in ops.items()}}


# ----------------------------------------------------------------------------------------------------------
# The workers: one subprocess per (implementation, oneDNN setting), driven over stdin/stdout.


def worker_main(argv):
    """`bench_encoder.py --_worker IMPL INTRA INTER`: reads JSON commands, answers prefixed JSON lines."""
    impl, intra, inter = argv[0], int(argv[1]), int(argv[2])
    import tensorflow as tf

    configure_threads(tf, intra, inter)
    runner = Runner(impl)
    send(dict(ready=True, **tensorflow_info(tf)))
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        send(_answer(tf, runner, cmd))


def tensorflow_info(tf):
    """Versions and whether oneDNN is on in this process (TensorFlow's own runtime flag)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        onednn = bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        onednn = None
    return {"tf_version": tf.__version__, "keras_version": importlib.metadata.version("keras"), "onednn_on": onednn}


def _answer(tf, runner, cmd):
    if cmd["cmd"] == "measure":
        return runner.measure(cmd["task"], cmd["size"], cmd["precision"], cmd["mode"], cmd["seq_len"], cmd["iters"],
                              cmd["batch"])
    if cmd["cmd"] == "peaks":
        return matmul_peaks(tf, min_seconds=cmd["seconds"], tokens=cmd["tokens"])
    if cmd["cmd"] == "ceilings":
        return {f"{task}/{size}/{batch}/{seq_len}": matmul_ceiling(tf, size, seq_len, batch, training=task == "train")
                for task, size, batch, seq_len in cmd["keys"]}
    if cmd["cmd"] == "rss":
        result = {}
        for seq_len in cmd["seq_lens"]:
            result[f"infer_{seq_len}"] = runner.measure("infer", cmd["size"], "float32", "graph", seq_len, 1,
                                                        cmd["batch"])
        if cmd["train_seq_len"]:
            result["train"] = runner.measure("train", cmd["size"], "float32", "graph", cmd["train_seq_len"], 1,
                                             cmd["train_batch"])
        result["peak_rss_mib"] = peak_rss_mib()
        return result
    return {"error": f"unknown command {cmd['cmd']!r}"}


def send(obj):
    sys.stdout.write(PROTOCOL_PREFIX + json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker_env(impl, onednn):
    """The environment of a worker: TF_USE_LEGACY_KERAS=1 for tf-models only; TF_ENABLE_ONEDNN_OPTS=`onednn`
    ("0" or "1"; "as_is" leaves it as this process has it)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    if impl == "tfm":
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    if onednn != "as_is":
        env["TF_ENABLE_ONEDNN_OPTS"] = onednn
    return env


class Worker:
    """A persistent subprocess running `Runner(impl)` under the oneDNN setting `onednn` ("0", "1", "as_is")."""

    def __init__(self, impl, intra, inter, onednn):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), WORKER_FLAG, impl, str(intra), str(inter)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=worker_env(impl, onednn), text=True, bufsize=1)
        self.name = f"{impl} (oneDNN {onednn})"
        self.info = self._read()
        if not self.info.get("ready"):
            raise RuntimeError(f"worker {self.name} did not start: {self.info}")

    def alive(self):
        return self.proc.poll() is None

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL_PREFIX):
                return json.loads(line[len(PROTOCOL_PREFIX):])
        raise RuntimeError(f"worker {self.name} exited with code {self.proc.wait()}")

    def call(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        if self.alive():
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            self.proc.wait(timeout=60)


class Pool:
    """The workers of every (implementation, setting), started up front; one that died (a crash, the OOM
    killer) is started again for its next command, and the command that killed it is a result: an error."""

    def __init__(self, impls, settings, intra, inter):
        self.threads = (intra, inter)
        self.workers = {}
        self.info = {}
        for setting in settings:
            for impl in impls:
                self.get(impl, setting)

    def get(self, impl, setting):
        worker = self.workers.get((impl, setting))
        if worker is None or not worker.alive():
            worker = self.workers[(impl, setting)] = Worker(impl, *self.threads, onednn=setting)
            self.info.setdefault(setting, worker.info)
        return worker

    def call(self, impl, setting, **cmd):
        try:
            return self.get(impl, setting).call(**cmd)
        except (RuntimeError, BrokenPipeError) as e:
            return {"error": f"{type(e).__name__}: {e}"}

    def close(self):
        for worker in self.workers.values():
            worker.close()


# ----------------------------------------------------------------------------------------------------------
# The benchmark.


def iters_for(iters, batch_size, seq_len):
    """Timed calls of a measurement: `iters` at batch 8, seq 128, scaled by the tokens of one call."""
    return max(1, round(iters * REFERENCE_TOKENS / (batch_size * seq_len)))


def build_schedule(cfg):
    """The measurements of one round, in order: dicts of task, size, batch, seq_len, precision, mode, iters."""
    schedule = []

    def add(task, size, batch, seq_len, precisions, modes):
        for precision in precisions:
            for mode in modes:
                if precision == "float32" or mode in cfg.mixed_modes:
                    schedule.append(dict(task=task, size=size, batch=batch, seq_len=seq_len, precision=precision,
                                         mode=mode, iters=iters_for(cfg.iters, batch, seq_len)))

    for size in cfg.sizes:
        for seq_len in cfg.seq_lens:
            add("infer", size, cfg.batch_size, seq_len, cfg.precisions, cfg.modes)
        for seq_len in cfg.batch1_seq_lens:
            add("infer", size, 1, seq_len, cfg.precisions, cfg.modes)
        if cfg.train_seq_len:
            add("train", size, cfg.train_batch_size, cfg.train_seq_len, cfg.train_precisions, cfg.train_modes)
    return schedule


def _measure_machine(pool, cfg, results, r, log):
    """Each setting's matmul peaks (and ceilings), in one of that setting's own workers."""
    for setting in cfg.settings:
        peaks = pool.call(cfg.impls[0], setting, cmd="peaks", seconds=cfg.peak_seconds, tokens=cfg.peak_tokens)
        results["peaks"][setting].append(peaks)
        log(f"round {r + 1}/{cfg.rounds} oneDNN {setting}: matmul peaks {peaks} GFLOP/s")
        if cfg.ceilings and "float32" in cfg.precisions:
            # Every float32 row of the schedule: inference at --batch_size and at batch 1, and the training step.
            keys = sorted({(m["task"], m["size"], m["batch"], m["seq_len"]) for m in build_schedule(cfg)
                           if m["precision"] == "float32"}, key=_sort_key)
            ceilings = pool.call(cfg.impls[0], setting, cmd="ceilings", keys=keys)
            results["ceilings"][setting].append(ceilings)
            log(f"round {r + 1}/{cfg.rounds} oneDNN {setting}: float32 matmul-only ceilings "
                + ", ".join(f"{k} {v['gflops']:.0f}" for k, v in ceilings.items() if isinstance(v, dict))
                + " GFLOP/s")


def _run_rounds(pool, cfg, results, log, on_round):
    units = [(impl, setting) for setting in cfg.settings for impl in cfg.impls]
    schedule = build_schedule(cfg)
    started = time.time()
    for r in range(cfg.rounds):
        results["load"].append(os.getloadavg()[0])
        _measure_machine(pool, cfg, results, r, log)
        for i, item in enumerate(schedule):
            # Rotate the order each round and item so no implementation or setting always runs first.
            shift = (r + i) % len(units)
            for impl, setting in units[shift:] + units[:shift]:
                res = pool.call(impl, setting, cmd="measure", **item)
                results["measurements"].append(dict(item, impl=impl, onednn=setting, round=r, **res))
                log(f"round {r + 1} {impl:9s} oneDNN {setting} {item['task']} {item['size']} B{item['batch']} "
                    f"seq {item['seq_len']} {item['precision']} {item['mode']}: "
                    + (f"{res['seq_per_s']:.2f} seq/s" if "seq_per_s" in res else res["error"])
                    + f"  ({time.time() - started:.0f}s elapsed)")
        results["load"].append(os.getloadavg()[0])
        results["wall_s"] = time.time() - started
        if on_round is not None:
            on_round(results)
    for setting in cfg.settings:
        results["peaks"][setting].append(pool.call(cfg.impls[0], setting, cmd="peaks", seconds=cfg.peak_seconds,
                                                   tokens=cfg.peak_tokens))


def _measure_rss(cfg, results, log):
    """Each implementation's peak RSS, per setting, each in a fresh worker."""
    for setting in cfg.settings:
        for size in cfg.sizes:
            for impl in cfg.impls:
                worker = Worker(impl, cfg.intra, cfg.inter, onednn=setting)
                try:
                    res = worker.call(cmd="rss", size=size, seq_lens=[max(cfg.seq_lens)], batch=cfg.batch_size,
                                      train_seq_len=cfg.train_seq_len, train_batch=cfg.train_batch_size)
                except RuntimeError as e:
                    res = {"error": str(e)}
                finally:
                    worker.close()
                results["rss"][setting][f"{impl}/{size}"] = res.get("peak_rss_mib")
                log(f"peak RSS {impl} {size} oneDNN {setting}: {res.get('peak_rss_mib', 0):.0f} MiB")


def run_benchmark(cfg, log, on_round=None):
    """Runs every measurement `cfg.rounds` times, interleaving implementations and oneDNN settings; returns the
    raw results dict.

    Args:
        cfg: the run's settings (`main` builds them from the flags): sizes, seq_lens, batch1_seq_lens, modes,
            precisions, mixed_modes (the modes also run with `mixed_bfloat16`), impls, settings (oneDNN
            settings), rounds, batch_size, iters, train_seq_len (0: none), train_batch_size, train_modes,
            train_precisions, intra, inter (TF thread pools), rss, ceilings, peak_seconds.
        log: callable(str) for progress.
        on_round: optional callable(results) after each round (e.g. to write partial tables).
    """
    results = {"measurements": [], "load": [], "settings": list(cfg.settings),
               "peaks": {s: [] for s in cfg.settings}, "ceilings": {s: [] for s in cfg.settings},
               "rss": {s: {} for s in cfg.settings}}
    started = time.time()
    pool = Pool(cfg.impls, cfg.settings, cfg.intra, cfg.inter)
    try:
        results["info"] = dict(pool.info)
        _run_rounds(pool, cfg, results, log, on_round)
    finally:
        pool.close()
    if cfg.rss:
        _measure_rss(cfg, results, log)
    results["wall_s"] = time.time() - started
    return results


# ----------------------------------------------------------------------------------------------------------
# Tables.


def median_table(results, setting, metric="seq_per_s"):
    """(task, size, batch, seq_len, precision, mode) -> impl -> median of `metric` under the oneDNN `setting`
    (an error string if no measurement gave one)."""
    table = {}
    for m in results["measurements"]:
        if m["onednn"] == setting:
            key = (m["task"], m["size"], m["batch"], m["seq_len"], m["precision"], m["mode"])
            table.setdefault(key, {}).setdefault(m["impl"], []).append(m.get(metric, m.get("error")))
    out = {}
    for key, per_impl in table.items():
        out[key] = {}
        for impl, values in per_impl.items():
            numbers = [v for v in values if isinstance(v, float)]
            out[key][impl] = statistics.median(numbers) if numbers else str(values[0])
    return out


def median_peaks(results, setting):
    """`{"float32", "bfloat16", "float32_cpu", "bfloat16_cpu"}` medians of the setting's peaks (None if none)."""
    peaks = [p for p in results["peaks"][setting] if "float32" in p]
    names = ("float32", "bfloat16", "float32_cpu", "bfloat16_cpu")
    return {n: statistics.median(p[n] for p in peaks) if peaks else None for n in names}


def setting_title(results, setting):
    on = results.get("info", {}).get(setting, {}).get("onednn_on")
    state = {True: "on", False: "off"}.get(on, "unknown")
    if setting == "as_is":
        return f"oneDNN {state} (TF_ENABLE_ONEDNN_OPTS as set here: {results.get('env_onednn') or 'unset'})"
    return f"oneDNN {state} (TF_ENABLE_ONEDNN_OPTS={setting})"


def _fmt(value, digits=2):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return "error"
    return f"{value:.{digits}f}"


def _sort_key(key):
    return (key[0], list(SIZES).index(key[1]), -key[2], key[3]) + tuple(key[4:])


def _best_of(med, row, impl):
    """(best median over the modes, that mode) of `impl` for `row` = (task, size, batch, seq_len, precision)."""
    values = [(med.get(row + (mode,), {}).get(impl), mode) for mode in MODES]
    values = [(v, mode) for v, mode in values if isinstance(v, float)]
    return max(values) if values else (None, None)


def _best(med, task, size, batch, seq_len, precision, impl):
    return _best_of(med, (task, size, batch, seq_len, precision), impl)[0]


def _percent_of_peak(value, row, peaks):
    task, size, _, seq_len, precision = row
    peak = peaks["float32"] if precision == "float32" else peaks["bfloat16"]
    if value is None or not peak:
        return "n/a"
    flops = (train_flops if task == "train" else encoder_flops)(size, seq_len)
    return f"{100 * value * flops / 1e9 / peak:.0f}%"


def render_summary(med, impls, peaks):
    """Per row (task, size, batch, seq, precision): each implementation's best mode, albert_tf / keras-hub, and
    each one's % of the matmul peak of the same precision."""
    titles = [IMPL_TITLES[i] for i in impls]
    header = ["task", "size", "batch", "seq", "precision"] + [f"{t} seq/s (mode)" for t in titles]
    both = {"albert_tf", "keras_hub"} <= set(impls)
    header += ["albert_tf / keras-hub"] if both else []
    header += [f"{t} % of peak" for t in titles]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in sorted({k[:5] for k in med}, key=_sort_key):
        best = {impl: _best_of(med, row, impl) for impl in impls}
        cells = [row[0], row[1], str(row[2]), str(row[3]), row[4]]
        cells += [f"{v:.2f} ({mode})" if v else "n/a" for v, mode in best.values()]
        if both:
            ours, theirs = best["albert_tf"][0], best["keras_hub"][0]
            cells.append(f"{ours / theirs:.2f}x" if ours and theirs else "n/a")
        cells += [_percent_of_peak(best[impl][0], row, peaks) for impl in impls]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_comparison(results, impls):
    """oneDNN on / off per row and implementation (best mode of each under each setting), and a line per
    implementation saying which setting is faster on this CPU (geometric mean over the rows)."""
    off, on = median_table(results, "0"), median_table(results, "1")
    rows = sorted({k[:5] for k in off} & {k[:5] for k in on}, key=_sort_key)
    header = ["task", "size", "batch", "seq", "precision"] + [f"{IMPL_TITLES[i]} on / off" for i in impls]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    ratios = {impl: [] for impl in impls}
    for row in rows:
        cells = [row[0], row[1], str(row[2]), str(row[3]), row[4]]
        for impl in impls:
            a, b = _best_of(on, row, impl)[0], _best_of(off, row, impl)[0]
            if a and b:
                ratios[impl].append((row[0], a / b))
            cells.append(f"{a / b:.2f}x" if a and b else ("only on" if a else "only off" if b else "n/a"))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for impl in impls:
        values = [r for _, r in ratios[impl]]
        if not values:
            lines.append(f"- {IMPL_TITLES[impl]}: no row measured under both settings.")
            continue
        mean = statistics.geometric_mean(values)
        per_task = ", ".join(f"{task} {statistics.geometric_mean([r for t, r in ratios[impl] if t == task]):.2f}x"
                             for task in sorted({t for t, _ in ratios[impl]}))
        lines.append(f"- {IMPL_TITLES[impl]}: faster with oneDNN **{'on' if mean > 1 else 'off'}** on this CPU "
                     f"(on / off, geometric mean over {len(values)} rows: {mean:.2f}x; {per_task}).")
    return lines


def render_rows(med, impls, peak32, peak16, unit="GFLOP/s"):
    """Markdown rows: medians per implementation and mode, albert_tf's ratios, GFLOP/s and % of peak (if peaks)."""
    lines = []
    with_peak = bool(peak32)
    header = ["task", "size", "batch", "seq", "precision", "mode"] + [IMPL_TITLES[i] for i in impls]
    others = [i for i in impls if i != "albert_tf"]
    if "albert_tf" in impls:
        header += [f"albert_tf / {i}" for i in others]
        header += [f"albert_tf {unit}", "% of peak"] if with_peak else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for key in sorted(med, key=_sort_key):
        task, size, batch, seq_len, precision, mode = key
        row = [task, size, str(batch), str(seq_len), precision, mode] + [_fmt(med[key].get(i)) for i in impls]
        ours = med[key].get("albert_tf")
        if "albert_tf" in impls:
            for other in others:
                theirs = med[key].get(other)
                ok = isinstance(ours, float) and isinstance(theirs, float)
                row.append(f"{ours / theirs:.2f}x" if ok else "n/a")
            if with_peak:
                flops = (train_flops if task == "train" else encoder_flops)(size, seq_len)
                ok = isinstance(ours, float)
                gflops = ours * flops / 1e9 if ok else None
                peak = peak32 if precision == "float32" else peak16
                row += [f"{gflops:.0f}", f"{100 * gflops / peak:.0f}%"] if ok and peak else ["n/a", "n/a"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def median_ceilings(results, setting):
    """(task, size, batch, seq_len) -> {"gflops": median ceiling, "ops": {name: median GFLOP/s}} over rounds
    ({} if none)."""
    per_key = {}
    for round_ceilings in results["ceilings"][setting]:
        for key, c in round_ceilings.items():
            if isinstance(c, dict):
                per_key.setdefault(key, []).append(c)
    out = {}
    for key, values in per_key.items():
        task, size, batch, seq_len = key.split("/")
        out[(task, size, int(batch), int(seq_len))] = {
            "gflops": statistics.median(v["gflops"] for v in values),
            "ops": {n: statistics.median(v["ops"][n] for v in values) for n in values[0]["ops"]}}
    return out


def render_ceilings(med, ceilings, peak32):
    names = list(next(iter(ceilings.values()))["ops"])
    lines = ["What a forward pass (training: forward and backward) would reach if it were nothing but its matmuls, "
             "each at the rate it reaches alone here (`matmul_ceiling`, timed like the peak; medians over rounds): "
             "an estimate of the best an implementation built from these ops can do, since LayerNorm, softmax, the "
             "mask, transposes and gathers count for nothing in it. GFLOP/s per op (training: over its forward "
             "and its two backward forms), the ceiling, the ceiling as % of the matmul peak, and albert_tf's best "
             "float32 mode as % of the ceiling.", "",
             "| task | size | batch | seq | " + " | ".join(names)
             + " | ceiling | ceiling / peak | albert_tf / ceiling |",
             "|---|---|---|---|" + "---|" * (len(names) + 3)]
    for (task, size, batch, seq_len), c in sorted(ceilings.items(), key=lambda kv: _sort_key(kv[0])):
        ours = _best(med, task, size, batch, seq_len, "float32", "albert_tf")
        flops = (train_flops if task == "train" else encoder_flops)(size, seq_len)
        achieved = f"{100 * ours * flops / 1e9 / c['gflops']:.0f}%" if ours else "n/a"
        of_peak = f"{100 * c['gflops'] / peak32:.0f}%" if peak32 else "n/a"
        lines.append(f"| {task} | {size} | {batch} | {seq_len} | " + " | ".join(f"{c['ops'][n]:.0f}" for n in names)
                     + f" | {c['gflops']:.0f} | {of_peak} | {achieved} |")
    return lines


# Issue #32's float32 targets, per oneDNN setting: (task, batch or None for --batch_size, seq or None for any,
# least ratio to keras-hub, least fraction of the float32 matmul peak).
TARGETS_32 = (
    ("train", None, 128, 1.1, 0.85),
    ("infer", 1, 128, 1.1, 0.85),
    ("infer", None, 128, 1.0, 0.90),
    ("infer", None, 512, 1.0, 0.90),
)


def render_targets(med, peak32, impls, basis, batch, ceilings=None):
    """Each float32 target of issue #32 that this run measured, with the measured values (best mode of each
    implementation): the ratio to keras-hub and albert_tf's fraction of the float32 matmul peak; with
    `ceilings`, the matmul-only ceiling beside the fraction. (The large B=1 T=512 training target is
    `bench_memory.py`'s.)"""
    if not {"albert_tf", "keras_hub"} <= set(impls):
        return ["(needs albert_tf and keras_hub in `--impls`)"]
    lines = [f"By {basis}; best `tf.function` mode of each implementation.", "",
             "| target | size | batch | seq | albert_tf / keras-hub | % of peak | met |",
             "|---|---|---|---|---|---|---|"]
    for task, size, b, seq_len in sorted({k[:4] for k in med}, key=_sort_key):
        for t_task, t_batch, t_seq, ratio, fraction in TARGETS_32:
            if (t_task, t_batch or batch, t_seq) != (task, b, seq_len):
                continue
            ours = _best(med, task, size, b, seq_len, "float32", "albert_tf")
            theirs = _best(med, task, size, b, seq_len, "float32", "keras_hub")
            if not (ours and theirs and peak32):
                continue
            flops = (train_flops if task == "train" else encoder_flops)(size, seq_len)
            frac = ours * flops / 1e9 / peak32
            ceiling = (ceilings or {}).get((task, size, b, seq_len))
            note = f" (matmul-only ceiling {100 * ceiling['gflops'] / peak32:.0f}%)" if ceiling else ""
            versus = "not below keras-hub" if ratio == 1.0 else f">= {ratio:g}x keras-hub"
            name = f"{'training step' if task == 'train' else 'inference'} {versus}, >= {100 * fraction:.0f}% of peak"
            met = ours / theirs >= ratio and frac >= fraction
            lines.append(f"| {name} | {size} | {b} | {seq_len} | {ours / theirs:.2f}x | {100 * frac:.0f}%{note} | "
                         f"{'yes' if met else 'no'} |")
    return lines


def render_details(results, setting, settings):
    """One setting's full tables: medians per mode (wall and CPU time), the matmul-only ceiling, the targets."""
    impls, batch = settings["impls"], settings["batch"]
    med, cpu_med = median_table(results, setting), median_table(results, setting, "seq_per_cpu_s")
    peaks = median_peaks(results, setting)
    lines = [f"## Details: {setting_title(results, setting)}", "",
             "Sequences per second (higher is better). `graph` = `tf.function`, `xla` = "
             "`tf.function(jit_compile=True)`; GFLOP/s and % of peak are albert_tf's, from the analytic FLOP count "
             "(training = 3x forward) against this setting's peak of the same precision (bfloat16 peak for "
             "`mixed_bfloat16`).", ""]
    lines += render_rows(med, impls, peaks["float32"], peaks["bfloat16"])
    ceilings = median_ceilings(results, setting)
    if ceilings:
        lines += ["", "### Matmul-only ceiling (float32)", ""] + render_ceilings(med, ceilings, peaks["float32"])
    lines += ["", "Sequences per CPU-second of each implementation's own worker process (`time.process_time`): "
              "less sensitive to the other jobs on a shared machine than wall time; GFLOP per CPU-second against "
              "the matmul peak per CPU-second.", ""]
    lines += render_rows(cpu_med, impls, peaks["float32_cpu"], peaks["bfloat16_cpu"], unit="GFLOP/cpu-s")
    lines += ["", "### Targets of issue #32", ""] + render_targets(med, peaks["float32"], impls, "wall time", batch,
                                                                   ceilings)
    lines += [""] + render_targets(cpu_med, peaks["float32_cpu"], impls, "CPU time", batch)
    return lines


def _peak_line(peaks, tokens):
    if not peaks["float32"]:
        return "Matmul peak: not measured (the worker failed)."
    shapes = ", ".join("x".join(map(str, (tokens,) + s[1:])) for s in PEAK_SHAPES)
    return (f"Measured matmul peak (best of {shapes}, median over "
            f"rounds): float32 **{peaks['float32']:.0f} GFLOP/s**, bfloat16 **{peaks['bfloat16']:.0f} GFLOP/s**; "
            f"per CPU-second of the worker: float32 {peaks['float32_cpu']:.0f}, bfloat16 "
            f"{peaks['bfloat16_cpu']:.0f} GFLOP/cpu-s.")


def render_header(results, settings):
    info = next(iter(results.get("info", {}).values()), {})
    load = results["load"] or [0.0]
    rounds = len({m["round"] for m in results["measurements"]})
    return [
        f"# Encoder benchmark ({settings['date']})", "",
        f"Command: `{settings['command']}`", "",
        f"Machine: {settings['machine']}; TensorFlow {info.get('tf_version', '?')}, Keras "
        f"{info.get('keras_version', '?')}; intra-op threads {settings['intra']}, inter-op threads "
        f"{settings['inter']}; {rounds} interleaved rounds, medians; oneDNN settings: "
        + ", ".join(setting_title(results, s) for s in results["settings"])
        + ", each implementation under each in its own worker process. Random weights, no dropout, v2 "
        f"configurations (E=128, vocab 30000). Load average (1 min) during the rounds: min {min(load):.2f}, "
        f"median {statistics.median(load):.2f}, max {max(load):.2f} (the machine is shared; numbers are noisy). "
        f"Wall time {results.get('wall_s', 0) / 60:.1f} min.", ""]


def render_markdown(results, settings):
    """The RESULTS.md text: settings; per oneDNN setting the peak and the summary (ratio, % of peak); which
    setting is faster; per setting the full tables; peak RSS; failures."""
    impls = settings["impls"]
    lines = render_header(results, settings)
    lines += ["## Per oneDNN setting: albert_tf / keras-hub and % of the matmul peak", "",
              "Best `tf.function` mode of each implementation (in brackets); % of this setting's matmul peak of the "
              "same precision (float32; bfloat16 for `mixed_bfloat16` rows), from the analytic FLOP count "
              "(training = 3x forward).", ""]
    for setting in results["settings"]:
        peaks = median_peaks(results, setting)
        lines += [f"### {setting_title(results, setting)}", "", _peak_line(peaks, settings["peak_tokens"]), ""]
        lines += render_summary(median_table(results, setting), impls, peaks) + [""]
    if {"0", "1"} <= set(results["settings"]):
        lines += ["## Which oneDNN setting is faster here", "",
                  "Best mode of each implementation under each setting; on / off > 1 means oneDNN on is faster.",
                  ""] + render_comparison(results, impls) + [""]
    for setting in results["settings"]:
        lines += render_details(results, setting, settings) + [""]
    lines += render_rss(results, settings) + render_failures(results)
    return "\n".join(lines).rstrip("\n") + "\n"


def render_rss(results, settings):
    if not any(results["rss"].values()):
        return []
    impls = settings["impls"]
    columns = [(impl, s) for s in results["settings"] for impl in impls]
    lines = ["## Peak RSS", "",
             "Each implementation alone in a fresh process: build, one float32 `graph` inference at "
             f"batch {settings['batch']}, seq {max(settings['seq_lens'])}"
             + (f", one training step at batch {settings['train_batch']}, seq {settings['train_seq_len']}"
                if settings["train_seq_len"] else "") + ".", "",
             "| size | " + " | ".join(f"{IMPL_TITLES[i]}, oneDNN {s}" for i, s in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for size in settings["sizes"]:
        lines.append(f"| {size} | " + " | ".join(
            _fmt(results["rss"][s].get(f"{i}/{size}"), 0) + " MiB" for i, s in columns) + " |")
    return lines + [""]


def render_failures(results):
    errors = sorted({(m["impl"], m["onednn"], m["task"], m["size"], m["batch"], m["seq_len"], m["precision"],
                      m["mode"], m["error"]) for m in results["measurements"] if "error" in m})
    if not errors:
        return []
    return ["## Failures", ""] + [f"- {e[0]} oneDNN {e[1]} {e[2]} {e[3]} batch {e[4]} seq {e[5]} {e[6]} {e[7]}: "
                                  f"`{e[8]}`" for e in errors]


def write_atomic(path, text):
    """Writes `text` to `path` through a temporary file beside it, so a partial table never replaces a whole one."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


class FlagError(ValueError):
    """A bad flag value: `main` prints it as one line and exits with status 2."""


def _parse_list(value, allowed, name):
    items = [v.strip() for v in value.split(",") if v.strip()]
    for item in items:
        if item not in allowed:
            raise FlagError(f"--{name} must be a comma-separated subset of {', '.join(allowed)}; got {value!r}")
    return items


def _parse_lengths(value, name):
    try:
        lengths = [int(s) for s in value.split(",") if s.strip()]
    except ValueError:
        raise FlagError(f"--{name} must be comma-separated integers; got {value!r}") from None
    if any(s < 2 or s > COMMON["max_position_embeddings"] for s in lengths):
        raise FlagError(f"--{name} must lie in [2, {COMMON['max_position_embeddings']}]; got {value!r}")
    return lengths


def config_from_flags(FLAGS):
    """The run's settings (`run_benchmark`'s `cfg`) from the flags; a bad value raises `FlagError`."""
    import types

    if FLAGS.onednn not in ONEDNN_CHOICES:
        raise FlagError(f"--onednn must be one of {', '.join(ONEDNN_CHOICES)}; got {FLAGS.onednn!r}")
    for name in ("rounds", "batch_size", "iters"):
        if FLAGS[name].value < 1:
            raise FlagError(f"--{name} must be >= 1; got {FLAGS[name].value}")
    if FLAGS.train_batch_size < 0 or FLAGS.peak_seconds <= 0 or FLAGS.peak_tokens < 1:
        raise FlagError("--train_batch_size must be >= 0 (0: --batch_size), --peak_seconds > 0, --peak_tokens >= 1")
    impls = _parse_list(FLAGS.impls, IMPLS, "impls")
    if not impls:
        raise FlagError("--impls must name at least one implementation")
    seq_lens = _parse_lengths(FLAGS.seq_lens, "seq_lens")
    train_seq_len = FLAGS.train_seq_len
    if train_seq_len:
        _parse_lengths(str(train_seq_len), "train_seq_len")
    return types.SimpleNamespace(
        sizes=_parse_list(FLAGS.sizes, SIZES, "sizes"), seq_lens=seq_lens,
        batch1_seq_lens=_parse_lengths(FLAGS.batch1_seq_lens, "batch1_seq_lens"),
        modes=_parse_list(FLAGS.modes, MODES, "modes"), precisions=_parse_list(FLAGS.precisions, PRECISIONS,
                                                                               "precisions"),
        mixed_modes=_parse_list(FLAGS.mixed_modes, MODES, "mixed_modes"), impls=impls,
        settings=ONEDNN_CHOICES[FLAGS.onednn], rounds=FLAGS.rounds, batch_size=FLAGS.batch_size, iters=FLAGS.iters,
        train_seq_len=train_seq_len, train_batch_size=FLAGS.train_batch_size or FLAGS.batch_size,
        train_modes=_parse_list(FLAGS.train_modes, MODES, "train_modes"),
        train_precisions=_parse_list(FLAGS.train_precisions, PRECISIONS, "train_precisions"),
        intra=FLAGS.intra_op_threads, inter=FLAGS.inter_op_threads, rss=FLAGS.rss, ceilings=FLAGS.ceiling,
        peak_seconds=FLAGS.peak_seconds, peak_tokens=FLAGS.peak_tokens)


def main(argv):
    from absl import flags, logging

    FLAGS = flags.FLAGS
    del argv
    try:
        cfg = config_from_flags(FLAGS)
    except FlagError as e:
        sys.stderr.write(f"bench_encoder.py: error: {e}\n")
        sys.exit(2)
    settings = dict(
        date=datetime.date.today().isoformat(), command="python benchmarks/bench_encoder.py " + " ".join(
            sys.argv[1:]), machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        intra=cfg.intra, inter=cfg.inter, batch=cfg.batch_size, train_batch=cfg.train_batch_size,
        rounds=cfg.rounds, impls=cfg.impls, seq_lens=cfg.seq_lens, sizes=cfg.sizes, train_seq_len=cfg.train_seq_len,
        peak_tokens=cfg.peak_tokens)

    def write(results, final):
        results["env_onednn"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
        text = render_markdown(results, settings)
        if final:
            print(text)
        if FLAGS.output:
            stem = os.path.splitext(FLAGS.output)[0]
            write_atomic(FLAGS.output, text)
            write_atomic(stem + ".json", json.dumps(results, indent=1))
            logging.info("wrote %s%s", FLAGS.output, "" if final else " (partial: rounds so far)")

    results = run_benchmark(cfg, logging.info, on_round=lambda partial: write(partial, final=False))
    write(results, final=True)


def define_flags():
    from absl import flags

    flags.DEFINE_string("sizes", "base", "Comma-separated model sizes: tiny (smoke runs), base, large, xlarge.")
    flags.DEFINE_string("seq_lens", "128,512", "Comma-separated inference sequence lengths at --batch_size.")
    flags.DEFINE_string("batch1_seq_lens", "128", "Comma-separated inference sequence lengths also run at batch 1 "
                        "(empty: none).")
    flags.DEFINE_string("onednn", "both", "TensorFlow CPU backends to measure, each in its own workers: both "
                        "(TF_ENABLE_ONEDNN_OPTS=0 and =1, interleaved), 0, 1, or as_is (the variable as set here).")
    flags.DEFINE_string("modes", "graph,xla", "Inference modes: graph (tf.function), xla (jit_compile=True).")
    flags.DEFINE_string("precisions", "float32,mixed_bfloat16", "Inference dtype policies.")
    flags.DEFINE_string("mixed_modes", "graph", "Modes also run with mixed_bfloat16 (XLA on CPU does not use "
                        "the BF16/AMX matmul kernels, so `xla` there only measures a slow path).")
    flags.DEFINE_string("impls", ",".join(IMPLS), "Implementations: albert_tf, keras_hub, tfm.")
    flags.DEFINE_integer("rounds", 2, "Interleaved rounds; the table holds medians over them.")
    flags.DEFINE_integer("batch_size", 8, "Batch size of inference at --seq_lens (and of training by default).")
    flags.DEFINE_integer("iters", 4, "Timed calls per measurement at batch 8, seq 128 (scaled by the tokens "
                         "of a call: 32 at batch 1, 1 at batch 8, seq 512).")
    flags.DEFINE_integer("train_seq_len", 128, "Sequence length of the training step; 0 skips training.")
    flags.DEFINE_integer("train_batch_size", 0, "Batch size of the training step (0: --batch_size); 1 with "
                         "--sizes=large --train_seq_len=512 is the large batch-1 step.")
    flags.DEFINE_string("train_modes", "graph,xla", "Training-step modes.")
    flags.DEFINE_string("train_precisions", "float32", "Training-step dtype policies.")
    flags.DEFINE_integer("intra_op_threads", os.cpu_count(), "TF intra-op threads in every worker.")
    flags.DEFINE_integer("inter_op_threads", 1, "TF inter-op threads in every worker.")
    flags.DEFINE_bool("rss", True, "Also measure each implementation's peak RSS in a fresh process, per setting.")
    flags.DEFINE_bool("ceiling", True, "Also measure the float32 matmul-only ceiling of each float32 row (inference, "
                      "training) every round, per setting (the matmul ops alone; see `matmul_ceiling`).")
    flags.DEFINE_float("peak_seconds", 0.5, "Seconds of timing per matmul shape of the peak (smaller for a smoke "
                       "run).")
    flags.DEFINE_integer("peak_tokens", 4096, "Rows of the peak's matmul shapes (the model's tokens per call: "
                         "batch 8 x seq 512); fewer for a smoke run.")
    flags.DEFINE_string("output", os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md"),
                        "Markdown output (raw results go beside it as .json); empty to only print.")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        worker_main(sys.argv[2:])
    else:
        from absl import app

        define_flags()
        app.run(main)
