r"""One-command device check: what albert_tf reaches on this machine's accelerator, in one table.

Measured in one process, on random data, on the first GPU (else the CPU), with XLA and the `--precision`
policy (`mixed_bfloat16` by default):

* pretraining: `loop.run_training` (the loop of `run_pretraining.py`: ALBERT's LAMB, the MLM + SOP loss,
  `iterations_per_loop` steps per call) on `AlbertPretrainer`, base and large (v2 shapes, no dropout) at
  seq 128 and 512: sequences/s and the model FLOPs utilisation (MFU) = sequences/s x FLOPs per sequence /
  the device's peak FLOP/s for the policy's compute dtype;
* fine-tuning: `loop.run_training` on `AlbertClassifier` (AdamW, 2 labels), base at seq 128: steps/s;
* inference: the encoder's forward (`tf.function(jit_compile=True)`), base at seq 128, batch 8 and 32:
  sequences/s;
* keras-hub's `AlbertBackbone` with the same shapes, policy and XLA in the same run: inference at batch 8
  and 32, and a fine-tuning step (backbone + a 2-way dense on `pooled_output`, Keras AdamW);
* each row's peak device memory (`tf.config.experimental.get_memory_info`; "n/a" where the allocator keeps
  no statistics, as TensorFlow's default CPU allocator);
* the JAX path (`--backends` has `jax`, the default): the same pretraining and fine-tuning rows through
  `training/jax_trainer.py` (one `jax.jit` step over `stateless_apply`) and the encoder's inference as `jax.jit`
  over `model.stateless_call`, each row in a process of its own under `KERAS_BACKEND=jax` on the same one
  device (its peak memory: JAX's `peak_bytes_in_use`), run before this process's TensorFlow touches the device
  so that the two runtimes never hold its memory at once; TensorFlow in those processes sees no GPU (it only
  reads the input). Without jax installed the JAX rows say "not run".

FLOPs per sequence (2 per multiply-add; T sequence length, E embedding, H hidden, I intermediate, L layers,
V vocabulary, P masked positions; LayerNorm, softmax, activations, gathers not counted):

    encoder forward  F = 2TEH + L(6TH^2 + 4T^2H + 2TH^2 + 4THI) + 2H^2
    pretraining      3 x (F + P(2HE + 2EV) + 4H)          (forward + backward = 3 x forward)
    fine-tuning      3 x (F + 4H)
    inference        F

The peak FLOP/s is the datasheet's dense tensor-core figure for the compute dtype of known devices
(`DEVICE_PEAKS`), `--peak_tflops` when given, else a matmul measured here (said in the table).

Reference points printed beside the table: NVIDIA DeepLearningExamples TF2 BERT-base inference, 1,786
sentences/s at batch 8, seq 128, FP16, A100-80GB; BERT-large pretraining, 485.6 sequences/s at seq 128,
one A100-80GB. BERT-base and ALBERT-base do the same FLOPs per sequence (sharing parameters saves no
compute), as do BERT-large and ALBERT-large.

On one GPU (expected 6-8 minutes, most of it XLA compilations: an estimate, not yet run on a GPU)::

    python benchmarks/device_check.py

On the CPU, a tiny model in two to three minutes on a shared CPU (the test suite runs the TensorFlow part,
and the JAX part where jax is installed)::

    python benchmarks/device_check.py --tiny
"""

import gc
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app, flags, logging

FLAGS = flags.FLAGS

SIZES = {
    "tiny": dict(vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, max_position_embeddings=64),
    "base": dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512),
    "large": dict(vocab_size=30000, embedding_size=128, hidden_size=1024, num_hidden_layers=24,
                  num_attention_heads=16, intermediate_size=4096, max_position_embeddings=512),
}
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, type_vocab_size=2)
MASKED = {128: 20, 512: 80, 16: 2, 32: 4}      # max_predictions_per_seq of the original data at each length
# (size, seq, batch) of the pretraining rows; the tiny run's stand-ins.
PRETRAIN = [("base", 128, 64), ("base", 512, 16), ("large", 128, 32), ("large", 512, 8)]
PRETRAIN_TINY = [("tiny", 16, 8), ("tiny", 32, 4)]

# Dense bfloat16/float16 tensor-core peak TFLOP/s (NVIDIA datasheets), by model name as a whole word of the
# device's name, the more specific first. Other parts (and V100 or T4, which have no bfloat16 tensor cores):
# a matmul measured in the run, or `--peak_tflops`.
DEVICE_PEAKS = (("H100 PCIe", 756.0), ("H200", 989.0), ("H100", 989.0), ("A100", 312.0), ("L40S", 362.0),
                ("L40", 181.0), ("L4", 121.0), ("A10", 125.0))
REFERENCES = [
    "NVIDIA DeepLearningExamples, TF2 BERT-base inference: 1,786 sentences/s at batch 8, seq 128, FP16, "
    "one A100-80GB.",
    "NVIDIA DeepLearningExamples, BERT-large pretraining: 485.6 sequences/s at seq 128, one A100-80GB.",
]


def encoder_flops(size, seq):
    s = SIZES[size]
    t, e, h, i, layers = seq, s["embedding_size"], s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"]
    return 2 * t * e * h + layers * (6 * t * h * h + 4 * t * t * h + 2 * t * h * h + 4 * t * h * i) + 2 * h * h


def pretraining_flops(size, seq, predictions):
    s = SIZES[size]
    h, e, v = s["hidden_size"], s["embedding_size"], s["vocab_size"]
    return 3 * (encoder_flops(size, seq) + predictions * (2 * h * e + 2 * e * v) + 4 * h)


def finetuning_flops(size, seq):
    return 3 * (encoder_flops(size, seq) + 4 * SIZES[size]["hidden_size"])


# --- the device ---------------------------------------------------------------------------------------------


def device_name(tf):
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU", "/cpu:0"
    details = tf.config.experimental.get_device_details(gpus[0])
    return details.get("device_name", "GPU"), "/gpu:0"


def measured_peak(tf, dtype, seconds=1.0, n=1024):
    """TFLOP/s of a square `tf.matmul` in `dtype` under XLA, the best of three runs of about `seconds`/3."""
    a = tf.random.normal([n, n], dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function(jit_compile=True)
    def chain(x):
        for _ in range(8):
            x = tf.matmul(x, a) * tf.cast(0.03, dtype)
        return x

    chain(a).numpy()
    best = 0.0
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 3:
            out = chain(a)
            calls += 1
        out.numpy()
        best = max(best, calls * 8 * 2 * n ** 3 / (time.perf_counter() - start) / 1e12)
    return best


def datasheet_peak(name, compute_dtype):
    """`(TFLOP/s, model)` of a known device for a 16-bit compute dtype, else `(None, None)`."""
    if compute_dtype in ("bfloat16", "float16"):
        for model, value in DEVICE_PEAKS:
            if re.search(rf"\b{model}\b", name):
                return value, model
    return None, None


def peak_tflops(tf, name, compute_dtype):
    if FLAGS.peak_tflops:
        return FLAGS.peak_tflops, "--peak_tflops"
    value, model = datasheet_peak(name, compute_dtype)
    if value:
        return value, f"datasheet ({model}, dense)"
    return measured_peak(tf, compute_dtype), f"measured {compute_dtype} matmul"


def reset_memory(tf, device):
    try:
        tf.config.experimental.reset_memory_stats(device)
        return True
    except (ValueError, RuntimeError, tf.errors.OpError):
        return False


def peak_memory(tf, device, tracked):
    if not tracked:
        return "n/a"
    return f"{tf.config.experimental.get_memory_info(device)['peak'] / 2 ** 20:,.0f} MiB"


def release(keras):
    keras.backend.clear_session()
    gc.collect()


# --- the measurements ---------------------------------------------------------------------------------------


def random_pretraining_batch(size, seq, batch, predictions, seed=0):
    rng = np.random.RandomState(seed)
    vocab = SIZES[size]["vocab_size"]
    ids = rng.randint(5, vocab, size=(batch, seq)).astype(np.int32)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), predictions, replace=False)
                                  for _ in range(batch)]), axis=1).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
            "masked_lm_positions": positions, "masked_lm_ids": np.take_along_axis(ids, positions, axis=1),
            "masked_lm_weights": np.ones((batch, predictions), np.float32),
            "next_sentence_labels": rng.randint(0, 2, size=(batch, 1)).astype(np.int32)}


def timed_loop(tf, strategy, model, optimizer, loss_fn, features, steps):
    """`loop.run_training` on a repeated in-memory batch: a first call of `steps` steps (tracing, XLA), then
    `steps` timed steps in one call; returns the second call's steps/s."""
    from albert_tf.training import loop

    loops = []

    def dataset_fn(context):
        del context
        return tf.data.Dataset.from_tensors(features).repeat()

    with tempfile.TemporaryDirectory() as model_dir:
        loop.run_training(model, optimizer, loss_fn, dataset_fn, strategy, model_dir, 2 * steps,
                          iterations_per_loop=steps, save_checkpoints_steps=0, jit_compile=True,
                          loop_callback=loops.append)
    return steps / loops[-1]["seconds"]


def pretraining_row(tf, keras, size, seq, batch, device):
    import albert_tf
    from albert_tf.training import distribution, optimization
    from albert_tf.tasks.pretraining.task import pretraining_loss_fn

    predictions = MASKED[seq]
    features = {k: tf.constant(v) for k, v in random_pretraining_batch(size, seq, batch, predictions).items()}
    tracked = reset_memory(tf, device)
    strategy = distribution.get_strategy("one_device")
    with strategy.scope():
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**SIZES[size], **NO_DROPOUT))
        optimizer = optimization.create_optimizer(1e-4, 10000, 100, optimizer="lamb")
    steps_per_second = timed_loop(tf, strategy, model, optimizer, pretraining_loss_fn, features, FLAGS.steps)
    memory = peak_memory(tf, device, tracked)
    release(keras)
    return dict(rate=steps_per_second * batch, unit="seq/s", flops=pretraining_flops(size, seq, predictions),
                memory=memory)


def finetuning_row(tf, keras, size, seq, batch, device):
    import albert_tf
    from albert_tf.tasks.glue.model import classifier_loss
    from albert_tf.training import distribution, optimization

    rng = np.random.RandomState(1)
    ids = rng.randint(5, SIZES[size]["vocab_size"], size=(batch, seq)).astype(np.int32)
    features = {"input_ids": tf.constant(ids), "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids),
                "label_ids": tf.constant(rng.randint(0, 2, size=batch).astype(np.int32))}

    def loss_fn(model, batch_features, training):
        outputs = model(batch_features, training=training)
        return tf.reduce_mean(classifier_loss(outputs, batch_features["label_ids"], 2)), {}

    tracked = reset_memory(tf, device)
    strategy = distribution.get_strategy("one_device")
    with strategy.scope():
        model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig(**SIZES[size], **NO_DROPOUT), num_labels=2)
        optimizer = optimization.create_optimizer(2e-5, 10000, 100, optimizer="adamw")
    steps_per_second = timed_loop(tf, strategy, model, optimizer, loss_fn, features, FLAGS.steps)
    memory = peak_memory(tf, device, tracked)
    release(keras)
    return dict(rate=steps_per_second, unit="steps/s", flops=finetuning_flops(size, seq), per_step=batch,
                memory=memory)


def rate_of(fn, inputs, seconds):
    """Calls/s of `fn(inputs)`: two warm-up calls, then as many calls as fit in `seconds` (synchronised once)."""
    for _ in range(2):
        _sync(fn(inputs))
    start = time.perf_counter()
    _sync(fn(inputs))
    calls = max(1, int(seconds / max(time.perf_counter() - start, 1e-6)))
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(inputs)
    _sync(out)
    return calls / (time.perf_counter() - start)


def _sync(out):
    np.asarray(out["pooled_output"] if isinstance(out, dict) and "pooled_output" in out else out)


def inference_rows(tf, keras, size, seq, batches, device, impl):
    """`{batch: row}` of the encoder forward under XLA (albert_tf's `AlbertModel` or keras-hub's backbone)."""
    rng = np.random.RandomState(2)
    tracked = reset_memory(tf, device)
    with tf.device(device):
        model, to_inputs = build_encoder(size, impl)
    # Both encoders return their last layer only, so that XLA keeps no other layer's output.
    forward = tf.function(lambda inputs: {key: model(inputs, training=False)[key]
                                          for key in ("sequence_output", "pooled_output")}, jit_compile=True)
    rows = {}
    for batch in batches:
        ids = rng.randint(5, SIZES[size]["vocab_size"], size=(batch, seq)).astype(np.int32)
        inputs = to_inputs(tf.constant(ids), tf.ones([batch, seq], tf.int32), tf.zeros([batch, seq], tf.int32))
        rows[batch] = dict(rate=rate_of(forward, inputs, FLAGS.seconds) * batch, unit="seq/s",
                           flops=encoder_flops(size, seq))
    memory = peak_memory(tf, device, tracked)
    for row in rows.values():
        row["memory"] = memory
    release(keras)
    return rows


def build_encoder(size, impl):
    """`(model, to_inputs(ids, mask, segments))` of the encoder `impl` (`albert_tf` or `keras_hub`)."""
    s = SIZES[size]
    if impl == "albert_tf":
        import albert_tf

        model = albert_tf.AlbertModel(albert_tf.AlbertConfig(**s, **NO_DROPOUT))
        return model, lambda ids, mask, seg: {"input_ids": ids, "input_mask": mask, "segment_ids": seg}
    import keras_hub

    model = keras_hub.models.AlbertBackbone(
        vocabulary_size=s["vocab_size"], num_layers=s["num_hidden_layers"], num_heads=s["num_attention_heads"],
        embedding_dim=s["embedding_size"], hidden_dim=s["hidden_size"], intermediate_dim=s["intermediate_size"],
        num_groups=1, num_inner_repetitions=1, dropout=0.0, max_sequence_length=s["max_position_embeddings"])
    return model, lambda ids, mask, seg: {"token_ids": ids, "padding_mask": mask, "segment_ids": seg}


def keras_hub_finetuning_row(tf, keras, size, seq, batch, device):
    """A fine-tuning step of keras-hub's backbone + a 2-way dense on `pooled_output` (Keras AdamW, XLA)."""
    rng = np.random.RandomState(1)
    ids = tf.constant(rng.randint(5, SIZES[size]["vocab_size"], size=(batch, seq)).astype(np.int32))
    labels = tf.constant(rng.randint(0, 2, size=batch).astype(np.int32))
    tracked = reset_memory(tf, device)
    with tf.device(device):
        backbone, to_inputs = build_encoder(size, "keras_hub")
        head = keras.layers.Dense(2, dtype="float32")
        optimizer = keras.optimizers.AdamW(2e-5, weight_decay=0.01)
    inputs = to_inputs(ids, tf.ones_like(ids), tf.zeros_like(ids))
    head.build((None, SIZES[size]["hidden_size"]))
    variables = backbone.trainable_variables + head.trainable_variables
    optimizer.build(variables)

    @tf.function(jit_compile=True)
    def step(batch_inputs):
        with tf.GradientTape() as tape:
            logits = head(backbone(batch_inputs, training=True)["pooled_output"])
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    rate = rate_of(step, inputs, FLAGS.seconds)
    memory = peak_memory(tf, device, tracked)
    release(keras)
    return dict(rate=rate, unit="steps/s", flops=finetuning_flops(size, seq), per_step=batch, memory=memory)


# --- the JAX path (each plan entry in a process of its own under KERAS_BACKEND=jax) ---------------------------


def jax_plan(tiny):
    """`[(what, implementation, size, seq, batch, measure)]` of the JAX rows, in order (the tiny run: one
    pretraining row)."""
    size, seq = ("tiny", 16) if tiny else ("base", 128)
    rows = [("pretraining", "albert_tf JAX loop", s, t, b, "pretraining") for s, t, b in (PRETRAIN_TINY[:1] if tiny
                                                                                             else PRETRAIN)]
    rows += [("fine-tuning", "albert_tf JAX loop", size, seq, 8 if tiny else 32, "finetuning"),
             ("inference", "albert_tf JAX", size, seq, (8, 32), "inference")]
    return rows


def _entry_batches(entry):
    return entry[4] if isinstance(entry[4], tuple) else (entry[4],)


def run_jax_entry(index, tiny):
    """`[(batch, row)]` of JAX plan entry `index`, measured by this script in a child process under
    `KERAS_BACKEND=jax` on this process's first GPU (else the CPU); a failure is a row saying so."""
    entry = jax_plan(tiny)[index]
    if importlib.util.find_spec("jax") is None:
        return [(b, dict(error="not run: jax is not installed")) for b in _entry_batches(entry)]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    first = "0" if visible is None else visible.split(",")[0]        # one device, as the TensorFlow rows
    xla_flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", os.environ.get("XLA_FLAGS", ""))
    env = dict(os.environ, KERAS_BACKEND="jax", CUDA_VISIBLE_DEVICES=first, XLA_FLAGS=xla_flags)
    argv = [sys.executable, os.path.abspath(__file__), f"--jax_entry={index}", f"--precision={FLAGS.precision}",
            f"--steps={FLAGS.steps}", f"--seconds={FLAGS.seconds}", f"--tiny={tiny}"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("JAXROWS ")]
    if proc.returncode or not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return [(b, dict(error=f"failed (exit {proc.returncode}): {last}")) for b in _entry_batches(entry)]
    return [(batch, row) for batch, row in json.loads(lines[-1][len("JAXROWS "):])]


def jax_entry_rows(entry):
    """`[(batch, row)]` of one JAX plan entry, in this process (`KERAS_BACKEND=jax`); out of memory is a row
    saying so."""
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")        # TensorFlow only reads the input here; the device is JAX's
    import jax
    import keras

    from albert_tf.training import distribution

    distribution.set_mixed_precision(FLAGS.precision)
    _, _, size, seq, batch, kind = entry
    try:
        if kind == "pretraining":
            rows = [(batch, jax_pretraining_row(size, seq, batch))]
        elif kind == "finetuning":
            rows = [(batch, jax_finetuning_row(keras, size, seq, batch))]
        else:
            rows = sorted(jax_inference_rows(size, seq, batch).items())
    except jax.errors.JaxRuntimeError as error:
        if "RESOURCE_EXHAUSTED" not in str(error):
            raise
        rows = [(b, dict(error="out of memory")) for b in _entry_batches(entry)]
    memory = jax_peak_memory(jax)
    return [(b, dict(row, memory=memory, jax=jax.__version__)) for b, row in rows]


def jax_peak_memory(jax):
    stats = jax.local_devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return "n/a" if peak is None else f"{peak / 2 ** 20:,.0f} MiB"


def jax_timed_loop(model, optimizer, loss_fn, features, devices, steps):
    """`loop.run_training` under JAX on a repeated in-memory batch: a first call of `steps` steps (tracing, XLA), then
    `steps` timed steps in one call; returns the second call's steps/s."""
    import tensorflow as tf

    from albert_tf.training import loop

    loops = []
    with tempfile.TemporaryDirectory() as model_dir:
        loop.run_training(model, optimizer, loss_fn, lambda context: tf.data.Dataset.from_tensors(
            features).repeat(), devices, model_dir, 2 * steps, iterations_per_loop=steps, save_checkpoints_steps=0,
            checkpoint_iterator=False, loop_callback=loops.append)
    return steps / loops[-1]["seconds"]


def jax_pretraining_row(size, seq, batch):
    import albert_tf
    from albert_tf.tasks.pretraining.task import pretraining_loss_fn
    from albert_tf.training import jax_distribution, optimization

    predictions = MASKED[seq]
    devices = jax_distribution.jax_devices()
    with devices.scope():
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**SIZES[size], **NO_DROPOUT))
        optimizer = optimization.create_optimizer(1e-4, 10000, 100, optimizer="lamb")
    features = random_pretraining_batch(size, seq, batch, predictions)
    steps_per_second = jax_timed_loop(model, optimizer, pretraining_loss_fn, features, devices, FLAGS.steps)
    return dict(rate=steps_per_second * batch, unit="seq/s", flops=pretraining_flops(size, seq, predictions))


def jax_finetuning_row(keras, size, seq, batch):
    import albert_tf
    from albert_tf.tasks.glue.model import classifier_loss
    from albert_tf.training import jax_distribution, optimization

    rng = np.random.RandomState(1)
    ids = rng.randint(5, SIZES[size]["vocab_size"], size=(batch, seq)).astype(np.int32)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
                "label_ids": rng.randint(0, 2, size=batch).astype(np.int32)}

    def loss_fn(model, batch_features, training):
        outputs = model(batch_features, training=training)
        return keras.ops.mean(classifier_loss(outputs, batch_features["label_ids"], 2)), {}

    devices = jax_distribution.jax_devices()
    with devices.scope():
        model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig(**SIZES[size], **NO_DROPOUT), num_labels=2)
        optimizer = optimization.create_optimizer(2e-5, 10000, 100, optimizer="adamw")
    steps_per_second = jax_timed_loop(model, optimizer, loss_fn, features, devices, FLAGS.steps)
    return dict(rate=steps_per_second, unit="steps/s", flops=finetuning_flops(size, seq), per_step=batch)


def jax_inference_rows(size, seq, batches):
    """`{batch: row}` of the encoder forward as `jax.jit` over `model.stateless_call` (the variables' values are
    arguments of the compiled function, as in `training/inference.py`, not constants folded into it)."""
    import jax

    rng = np.random.RandomState(2)
    model, _ = build_encoder(size, "albert_tf")
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    @jax.jit
    def forward(trainable_values, non_trainable_values, inputs):
        outputs, _ = model.stateless_call(trainable_values, non_trainable_values, inputs, training=False)
        return {key: outputs[key] for key in ("sequence_output", "pooled_output")}

    rows = {}
    for batch in batches:
        ids = rng.randint(5, SIZES[size]["vocab_size"], size=(batch, seq)).astype(np.int32)
        inputs = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
        rate = rate_of(lambda x: forward(trainable, non_trainable, x), inputs, FLAGS.seconds)
        rows[batch] = dict(rate=rate * batch, unit="seq/s", flops=encoder_flops(size, seq))
    return rows


# --- the table ----------------------------------------------------------------------------------------------


def plan(tiny):
    """`[(what, implementation, size, seq, batch, measure)]` of the rows, in order."""
    size, seq = ("tiny", 16) if tiny else ("base", 128)
    rows = [("pretraining", "albert_tf loop", s, t, b, "pretraining") for s, t, b in (PRETRAIN_TINY if tiny
                                                                                         else PRETRAIN)]
    finetune_batch = 8 if tiny else 32
    rows += [("fine-tuning", "albert_tf loop", size, seq, finetune_batch, "finetuning"),
             ("fine-tuning", "keras-hub step", size, seq, finetune_batch, "keras_hub_finetuning")]
    rows += [("inference", impl, size, seq, (8, 32), f"inference:{key}")
             for impl, key in (("albert_tf", "albert_tf"), ("keras-hub AlbertBackbone", "keras_hub"))]
    return rows


def measure(tf, keras, entry, device):
    """`[(batch, row dict)]` of one plan entry; a failure (out of memory, no keras-hub) is a row saying so."""
    _, _, size, seq, batch, kind = entry
    try:
        if kind == "pretraining":
            return [(batch, pretraining_row(tf, keras, size, seq, batch, device))]
        if kind == "finetuning":
            return [(batch, finetuning_row(tf, keras, size, seq, batch, device))]
        if kind == "keras_hub_finetuning":
            return [(batch, keras_hub_finetuning_row(tf, keras, size, seq, batch, device))]
        rows = inference_rows(tf, keras, size, seq, batch, device, kind.split(":")[1])
        return sorted(rows.items())
    except (tf.errors.ResourceExhaustedError, ImportError) as error:
        release(keras)
        reason = "out of memory" if isinstance(error, tf.errors.ResourceExhaustedError) else f"not run: {error}"
        return [(b, dict(error=reason)) for b in (batch if isinstance(batch, tuple) else (batch,))]


def format_row(entry, batch, row, peak):
    what, impl, size, seq = entry[:4]
    shape = f"{size}, seq {seq}, batch {batch}"
    if "error" in row:
        return f"| {what} | {impl} | {shape} | {row['error']} | | | | |"
    sequences = row["rate"] * row.get("per_step", 1)
    achieved = sequences * row["flops"] / 1e12
    return (f"| {what} | {impl} | {shape} | {row['rate']:,.1f} {row['unit']} | {row['flops'] / 1e9:.4g} | "
            f"{achieved:.4g} | {100 * achieved / peak:.1f}% | {row['memory']} |")


def run_check(tiny, backends=("tensorflow", "jax")):
    """Runs every row; returns the markdown text of the table, its header lines and the reference points."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    start = time.time()
    # The JAX rows first, each in a process of its own: this process's TensorFlow has not yet taken the device.
    jax_rows = [(entry, run_jax_entry(index, tiny)) for index, entry in enumerate(jax_plan(tiny))
                if "jax" in backends]
    os.environ["KERAS_BACKEND"] = "tensorflow"      # this process measures the TensorFlow path
    import keras
    import tensorflow as tf

    from albert_tf.training import distribution

    policy = distribution.set_mixed_precision(FLAGS.precision)
    name, device = device_name(tf)
    memory_device = "GPU:0" if device == "/gpu:0" else "CPU:0"
    peak, peak_source = peak_tflops(tf, name, policy.compute_dtype)
    lines = ["| Row | Implementation | Shape | Rate | GFLOP per sequence | Achieved TFLOP/s | MFU | Peak memory |",
             "|---|---|---|---|---|---|---|---|"]
    for entry in plan(tiny) if "tensorflow" in backends else ():
        for batch, row in measure(tf, keras, entry, memory_device):
            lines.append(format_row(entry, batch, row, peak))
            print(lines[-1], flush=True)
    for entry, rows in jax_rows:
        for batch, row in rows:
            lines.append(format_row(entry, batch, row, peak))
            print(lines[-1], flush=True)
    versions = f"TensorFlow {tf.__version__}, Keras {keras.__version__}"
    jax_versions = {row["jax"] for _, rows in jax_rows for _, row in rows if "jax" in row}
    if jax_versions:
        versions += f", JAX {', '.join(sorted(jax_versions))}"
    header = [f"Device: {name}; policy {policy.name}, XLA; {versions}; peak {peak:.4g} TFLOP/s ({peak_source}); "
              f"{time.time() - start:.0f} s in all."]
    return "\n".join(header + [""] + lines + [""] + [f"* {line}" for line in REFERENCES]) + "\n"


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    logging.set_verbosity(logging.WARNING)
    if FLAGS.tiny:
        FLAGS.steps, FLAGS.seconds = min(FLAGS.steps, 2), min(FLAGS.seconds, 0.3)
    if FLAGS.jax_entry is not None:
        print("JAXROWS " + json.dumps(jax_entry_rows(jax_plan(FLAGS.tiny)[FLAGS.jax_entry])), flush=True)
        return
    unknown = sorted(set(FLAGS.backends) - {"tensorflow", "jax"})
    if unknown or not FLAGS.backends:
        raise app.UsageError(f"--backends: expected some of tensorflow,jax. Received: {','.join(FLAGS.backends)}")
    text = run_check(FLAGS.tiny, FLAGS.backends)
    sys.stdout.write("\n" + text)
    if FLAGS.output:
        with open(FLAGS.output + ".tmp", "w") as f:
            f.write(text)
        os.replace(FLAGS.output + ".tmp", FLAGS.output)


def define_flags():
    """The command's flags (defined when it runs, so that importing this module defines none)."""
    flags.DEFINE_bool("tiny", False, "A tiny model and short runs (the CPU smoke run of the test suite).")
    flags.DEFINE_enum("precision", "mixed_bfloat16", ["float32", "mixed_bfloat16", "mixed_float16"],
                      "Keras dtype policy of every row.")
    flags.DEFINE_float("peak_tflops", None, "The device's peak TFLOP/s for the policy's compute dtype (default: the "
                       "datasheet figure of a known device, else a measured matmul).")
    flags.DEFINE_integer("steps", 20, "Timed training steps per row (one `iterations_per_loop` call).")
    flags.DEFINE_float("seconds", 5.0, "Timed seconds per inference row.")
    flags.DEFINE_string("output", None, "Optional markdown file for the table.")
    flags.DEFINE_list("backends", ["tensorflow", "jax"], "Keras backends whose rows run: tensorflow (this "
                      "process), jax (a process per row under KERAS_BACKEND=jax).")
    flags.DEFINE_integer("jax_entry", None, "Internal: measure this row of the JAX plan in this process (run "
                         "under KERAS_BACKEND=jax) and print it.")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    define_flags()
    app.run(main)
