"""Batch-1 inference latency of ALBERT's deployable forms, interleaved in one process (run by hand).

For each preset (base, large) and sequence length (128, 384), on the same seeded weights:

* ours, TensorFlow: the `AlbertModel` forward as a `tf.function` (graph) and with `jit_compile=True` (XLA);
* ours, LiteRT (`albert_tf.export.lite`): float32, float16, dynamic-range int8 and int8 (calibrated on seeded ids),
  each with 1 and 2 interpreter threads (XNNPACK);
* keras-hub `AlbertBackbone` float32 (graph and XLA; the best is the peer);
* Hugging Face PyTorch `AlbertModel` float32 and `torch.ao.quantization.quantize_dynamic` (qint8);
* ONNX Runtime float32 and dynamic int8 (`onnxruntime.quantization.quantize_dynamic`) of that PyTorch model.

The peers come from the `bench` extra (`pip install -e .[bench]`, torch from the CPU index, then
`pip uninstall -y triton`: torch's GPU compiler is not used on the CPU, and importing it in a process that
has loaded TensorFlow ends the process with a segmentation fault); a peer whose package is missing is reported
as skipped. Each round runs every runner once, in turn, so that a change in the
machine's load hits all of them alike; the table gives the median and p90 latency, seq/s, the file size where
there is one and the process's RSS growth when the runner was loaded (the process's peak RSS is printed at the
end). Installs nothing itself.

    python benchmarks/bench_lite.py --presets=base --seq_lengths=128 --rounds=20
"""

import argparse
import gc
import json
import os
import resource
import statistics
import tempfile
import time

import numpy as np


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _inputs(seq, vocab_size, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, [1, seq]).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}


def ours_tf(model, feats, jit):
    import tensorflow as tf

    forward = tf.function(lambda f: model(f, training=False)["sequence_output"], jit_compile=jit)
    tensors = {k: tf.constant(v) for k, v in feats.items()}
    return lambda: forward(tensors).numpy()


def ours_lite(model, feats, quantize, threads, tmp):
    from albert_tf.export import lite

    seq = feats["input_ids"].shape[1]
    calibration = None
    if quantize == "int8":
        calibration = [{k: v[0] for k, v in _inputs(seq, model.config.vocab_size, seed).items()} for seed in range(8)]
    path = os.path.join(tmp, f"{quantize}.tflite")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(lite.convert(model, seq, 1, quantize, calibration))
    runner = lite.LiteModel(path, num_threads=threads)
    return (lambda: runner(feats, ["sequence_output"])), os.path.getsize(path)


def keras_hub_backbone(config, feats, jit):
    import keras_hub
    import tensorflow as tf

    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        num_groups=1, num_inner_repetitions=1, embedding_dim=config.embedding_size, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=0.0, max_sequence_length=config.max_position_embeddings)
    inputs = {"token_ids": tf.constant(feats["input_ids"]), "segment_ids": tf.constant(feats["segment_ids"]),
              "padding_mask": tf.constant(feats["input_mask"])}
    forward = tf.function(lambda x: backbone(x, training=False)["sequence_output"], jit_compile=jit)
    return lambda: forward(inputs).numpy()


def hf_torch(config, feats, quantized, tmp, onnx=None):
    import torch
    import transformers

    hf_config = transformers.AlbertConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size, hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, hidden_act="gelu_new", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, max_position_embeddings=config.max_position_embeddings)
    torch.manual_seed(0)
    model = transformers.AlbertModel(hf_config).eval()
    inputs = {"input_ids": torch.from_numpy(feats["input_ids"]).long(),
              "attention_mask": torch.from_numpy(feats["input_mask"]).long(),
              "token_type_ids": torch.from_numpy(feats["segment_ids"]).long()}
    if onnx is None:
        if quantized:
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

        def run():
            with torch.inference_mode():
                return model(**inputs).last_hidden_state.numpy()
        return run, None
    import onnxruntime

    path = os.path.join(tmp, f"hf_{feats['input_ids'].shape[1]}.onnx")
    if not os.path.exists(path):
        torch.onnx.export(model, (inputs["input_ids"], inputs["attention_mask"], inputs["token_type_ids"]), path,
                          input_names=list(inputs), output_names=["last_hidden_state"], opset_version=17,
                          dynamo=False)
    if onnx == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        qpath = path.replace(".onnx", "_int8.onnx")
        if not os.path.exists(qpath):
            quantize_dynamic(path, qpath, weight_type=QuantType.QInt8)
        path = qpath
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    np_inputs = {k: v.numpy() for k, v in inputs.items()}
    return (lambda: session.run(None, np_inputs)[0]), os.path.getsize(path)


def build_runners(preset, seq, tmp, peers):
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.models.albert_model import AlbertModel

    config = AlbertConfig.from_preset(preset)
    tf.keras.utils.set_random_seed(0)
    model = AlbertModel(config)
    feats = _inputs(seq, config.vocab_size)
    model({k: tf.constant(v) for k, v in feats.items()}, training=False)
    makers = {"ours graph": lambda: (ours_tf(model, feats, False), None),
              "ours XLA": lambda: (ours_tf(model, feats, True), None)}
    for quantize in ("none", "float16", "dynamic", "int8"):
        for threads in (1, 2):
            name = f"ours LiteRT {'float32' if quantize == 'none' else quantize} {threads}t"
            makers[name] = (lambda q=quantize, t=threads: ours_lite(model, feats, q, t, tmp))
    if "keras_hub" in peers:
        makers["keras-hub graph"] = lambda: (keras_hub_backbone(config, feats, False), None)
        makers["keras-hub XLA"] = lambda: (keras_hub_backbone(config, feats, True), None)
    if "torch" in peers:
        makers["HF torch float32"] = lambda: hf_torch(config, feats, False, tmp)
        makers["HF torch qint8"] = lambda: hf_torch(config, feats, True, tmp)
    if "onnx" in peers:
        makers["ORT float32"] = lambda: hf_torch(config, feats, False, tmp, onnx="float32")
        makers["ORT int8"] = lambda: hf_torch(config, feats, False, tmp, onnx="int8")
    runners, skipped = {}, {}
    for name, make in makers.items():
        before = _rss_mb()
        try:
            run, size = make()
            run()  # Warm-up: tracing, compilation, delegate set-up.
        except ImportError as e:
            skipped[name] = f"not installed: {e.name}"
            continue
        runners[name] = {"run": run, "size_mb": size / 1e6 if size else None, "rss_mb": _rss_mb() - before}
    return runners, skipped


def bench(preset, seq, rounds, tmp, peers):
    runners, skipped = build_runners(preset, seq, tmp, peers)
    times = {name: [] for name in runners}
    for _ in range(rounds):
        for name, r in runners.items():
            start = time.perf_counter()
            r["run"]()
            times[name].append(time.perf_counter() - start)
    rows = []
    for name, r in runners.items():
        t = sorted(times[name])
        median = statistics.median(t)
        rows.append({"runner": name, "median_ms": 1e3 * median, "p90_ms": 1e3 * t[int(0.9 * (len(t) - 1))],
                     "seq_per_s": 1.0 / median, "size_mb": r["size_mb"], "rss_growth_mb": r["rss_mb"]})
    return rows, skipped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="base_v2,large_v2")
    parser.add_argument("--seq_lengths", default="128,384")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--peers", default="keras_hub,torch,onnx", help="comma list of keras_hub, torch, onnx")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    peers = set(filter(None, args.peers.split(",")))
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_lite_") as tmp:
        for preset in args.presets.split(","):
            for seq in map(int, args.seq_lengths.split(",")):
                case_dir = os.path.join(tmp, f"{preset}_{seq}")
                os.makedirs(case_dir)
                rows, skipped = bench(preset, seq, args.rounds, case_dir, peers)
                print(f"\n{preset}, batch 1, seq {seq}, {args.rounds} interleaved rounds")
                print(f"{'runner':26s} {'median ms':>10s} {'p90 ms':>8s} {'seq/s':>7s} {'file MB':>8s} {'+RSS MB':>8s}")
                for r in rows:
                    size = f"{r['size_mb']:.1f}" if r["size_mb"] else "-"
                    print(f"{r['runner']:26s} {r['median_ms']:10.1f} {r['p90_ms']:8.1f} {r['seq_per_s']:7.2f} "
                          f"{size:>8s} {r['rss_growth_mb']:8.0f}")
                for name, why in skipped.items():
                    print(f"{name:26s} skipped ({why})")
                results.append({"preset": preset, "seq": seq, "rows": rows, "skipped": skipped})
                gc.collect()
    print(f"\npeak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average: {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
