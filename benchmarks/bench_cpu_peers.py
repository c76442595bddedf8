"""Classifying real text on a CPU: albert_tf's float and int8 routes against transformers (PyTorch) and ONNX
Runtime (float32 and dynamic int8), all on the same weights, tokenization included, outputs compared.

The model: one random albert-base 2-label classifier written by albert_tf (seeded; its `vocab_size` the pieces of
a SentencePiece model trained here on the quickstart's corpus, CPython's `pydoc_data.topics`: no network), as a
release directory (TF1 checkpoint), converted once by albert_tf's own Hugging Face writer
(`albert-convert --format=hf`: safetensors, `spiece.model`), exported from that to ONNX (`torch.onnx.export`),
optimized by ONNX Runtime's transformer optimizer (`onnxruntime.transformers.optimizer`, `model_type="bert"`:
fused attention, skip-LayerNorm, GELU) and quantized by `onnxruntime.quantization.quantize_dynamic` (QInt8
weights); and as LiteRT exports by `albert-export --format=tflite --quantize=dynamic --batch_size=32
--max_seq_length=160` (resizable inputs, the default) and the same with `--nodynamic_shapes` (fixed 160).

The texts: `--num_texts` runs of consecutive real English sentences of that corpus, chosen so that their packed
lengths spread from 20 to 152 pieces with a mean near 64 (the selection is printed), in a shuffled order.

Routes (`--routes`; each in a process of its own, `--threads` threads for every engine):

* `albert_tf`: `albert_tf.pipeline("text-classification", release, batch_size=32)` (TensorFlow, its defaults);
  run once per `--onednn` setting (`TF_ENABLE_ONEDNN_OPTS`; `default` leaves it unset);
* `albert_tf_int8`: `albert_tf.pipeline("text-classification", "<lite>/model.tflite", num_threads=...)` on the
  resizable dynamic-int8 LiteRT export (each batch at its own length, sorted by length);
* `albert_tf_int8_fixed`: the same on the fixed-shape export (every text padded to 160);
* `transformers`: transformers' `pipeline("text-classification", batch_size=32)`, texts in the given order;
* `transformers_sorted`: the tokenizer, then batches sorted by length, padded to each batch's longest, through
  `AlbertForSequenceClassification` (`torch.inference_mode`);
* `ort_fp32`, `ort_int8`: ONNX Runtime on the optimized graph and its dynamic-int8 quantization, sorted batches
  as `transformers_sorted` (the same tokenizer).

Each measurement process loads its route, makes one warm-up call on the first batch, then `--calls` timed calls
on all the texts (best kept); rounds interleave the routes (A B C ... A B C ...). The table gives the best
seconds over every call and round, the median of the rounds' bests, the process's CPU seconds of the best
call (on a busy machine, with `--threads=1`, a steadier measure of the work than the wall clock), the ratio to `albert_tf` (default oneDNN)
and to `ort_int8`, and the largest probability difference and decisions flipped against `albert_tf`'s float.

Installs nothing: the peers are the `bench` extra (`pip install torch==<the CPU build>` first, then
`pip install -e '.[lite,bench]'`; `pip uninstall -y triton` if it came along). The measurement of
benchmarks/README.md::

    python benchmarks/bench_cpu_peers.py --num_texts=96 --rounds=2 --threads=2 --onednn=0,1

A smoke run (tiny model, seconds)::

    python benchmarks/bench_cpu_peers.py --size=tiny --num_texts=24 --rounds=1 --calls=1
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROUTES = ("albert_tf", "albert_tf_int8", "albert_tf_int8_fixed", "transformers", "transformers_sorted", "ort_fp32",
          "ort_int8")
TF_ROUTES = ("albert_tf",)   # the routes whose kernels TF_ENABLE_ONEDNN_OPTS changes
TINY = dict(embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=512)
LITE_BATCH, LITE_LENGTH = 32, 160
SHORTEST, LONGEST, MEAN = 20, 152, 64


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="base", choices=("tiny", "base"))
    parser.add_argument("--num_texts", type=int, default=96)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="threads of every engine")
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--onednn", default="default", help="TF_ENABLE_ONEDNN_OPTS settings of the TF routes: "
                        "comma-separated of default, 0, 1")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=2, help="timed calls per measurement (best kept)")
    parser.add_argument("--vocab_size", type=int, default=30000)
    parser.add_argument("--work_dir", default=None, help="keeps the model files (default: a temporary directory)")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)   # one measurement (a child process)
    parser.add_argument("--prepare_onnx", action="store_true", help=argparse.SUPPRESS)   # a child process
    return parser.parse_args()


# --- The texts -------------------------------------------------------------------------------------------------


def select_texts(tokenizer, number, seed=0):
    """`number` runs of 1-6 consecutive sentences of the pydoc topics whose packed lengths (pieces + [CLS] and
    [SEP]) follow a log-normal spread clipped to [SHORTEST, LONGEST] with the extremes included, no sentence used
    twice, shuffled."""
    import numpy as np

    from albert_tf.quickstart.corpus import topic_documents

    candidates = []
    for _, document in topic_documents():
        for start in range(len(document)):
            for size in range(1, 7):
                if start + size <= len(document):
                    text = " ".join(document[start:start + size])
                    length = len(tokenizer.tokenize(text.lower())) + 2
                    if SHORTEST <= length <= LONGEST:
                        candidates.append((length, id(document), start, size, text))
    rng = np.random.default_rng(seed)
    targets = np.clip(rng.lognormal(np.log(MEAN * 0.9), 0.5, number), SHORTEST, LONGEST)
    targets.sort()
    targets[0], targets[-1] = SHORTEST, LONGEST
    used, chosen = set(), []
    for target in targets:
        best = None
        for candidate in candidates:
            length, doc, start, size, _ = candidate
            if any((doc, s) in used for s in range(start, start + size)):
                continue
            if best is None or abs(length - target) < abs(best[0] - target):
                best = candidate
                if length == round(target):
                    break
        if best is None:
            raise SystemExit(f"The corpus has too few sentences for {number} texts.")
        used.update((best[1], s) for s in range(best[2], best[2] + best[3]))
        chosen.append(best)
    order = rng.permutation(len(chosen))
    return [chosen[i][4] for i in order], [chosen[i][0] for i in order]


# --- The files -------------------------------------------------------------------------------------------------


def prepare(args):
    """The release directory, Hugging Face directory, LiteRT exports, ONNX files and texts under `work_dir`."""
    import shutil

    work_dir = args.work_dir
    release = os.path.join(work_dir, "release")
    if not os.path.isdir(release):
        import sentencepiece as spm
        import tensorflow as tf

        from albert_tf.checkpoints import save_tf1_checkpoint
        from albert_tf.checkpoints.convert import convert
        from albert_tf.config import AlbertConfig
        from albert_tf.quickstart.corpus import corpus_documents
        from albert_tf.tasks.glue.model import AlbertClassifier
        from albert_tf.text.vocab import train_sentencepiece

        corpus = os.path.join(work_dir, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for _, document in corpus_documents():
                f.write("\n".join(s.lower() for s in document) + "\n")
        spm_file = train_sentencepiece(corpus, os.path.join(work_dir, "spm"), vocab_size=args.vocab_size,
                                       hard_vocab_limit=False, minloglevel=2)
        pieces = spm.SentencePieceProcessor(model_file=spm_file).get_piece_size()
        config = AlbertConfig(vocab_size=pieces, **TINY) if args.size == "tiny" else \
            AlbertConfig.from_preset("base_v2")
        config.vocab_size = pieces
        tmp = release + ".tmp"
        os.makedirs(tmp, exist_ok=True)
        tf.keras.utils.set_random_seed(0)
        model = AlbertClassifier(config, num_labels=2)
        model({"input_ids": tf.ones([1, 8], tf.int32), "input_mask": tf.ones([1, 8], tf.int32),
               "segment_ids": tf.zeros([1, 8], tf.int32)})
        save_tf1_checkpoint(model, os.path.join(tmp, "model.ckpt-best"))
        config.to_json_file(os.path.join(tmp, "albert_config.json"))
        shutil.copy(spm_file, os.path.join(tmp, "30k-clean.model"))
        convert(tmp, os.path.join(work_dir, "hf"), output_format="hf")
        os.rename(tmp, release)
    for name, extra in (("lite", []), ("lite_fixed", ["--nodynamic_shapes"])):
        if not os.path.isfile(os.path.join(work_dir, name, "albert_lite.json")):
            command = [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={release}",
                       "--model=classifier", f"--export_dir={os.path.join(work_dir, name)}", "--format=tflite",
                       "--quantize=dynamic", f"--batch_size={LITE_BATCH}", f"--max_seq_length={LITE_LENGTH}"] + extra
            print("$ albert-export " + " ".join(command[4:]), flush=True)
            subprocess.run(command, check=True, capture_output=True)
    if not os.path.isfile(os.path.join(work_dir, "onnx", "int8.onnx")):
        subprocess.run([sys.executable, os.path.abspath(__file__), "--prepare_onnx", f"--work_dir={work_dir}",
                        f"--size={args.size}"], check=True)
    texts_file = os.path.join(work_dir, f"texts_{args.num_texts}.json")
    if not os.path.isfile(texts_file):
        from albert_tf.text import tokenization
        tokenizer = tokenization.FullTokenizer(spm_model_file=os.path.join(release, "30k-clean.model"))
        texts, lengths = select_texts(tokenizer, args.num_texts)
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump({"texts": texts, "lengths": lengths}, f)
    with open(texts_file, encoding="utf-8") as f:
        lengths = json.load(f)["lengths"]
    padded = sum(max(batch) * len(batch) for batch in _chunks(sorted(lengths), args.batch_size))
    print(f"{len(lengths)} texts: {min(lengths)}-{max(lengths)} pieces, mean {statistics.mean(lengths):.1f}, "
          f"{sum(lengths)} real tokens, {padded} padded to each sorted batch's longest, "
          f"{len(lengths) * LITE_LENGTH} padded to {LITE_LENGTH}", flush=True)


def prepare_onnx(work_dir, size):
    """The ONNX export of the Hugging Face directory, its transformer-optimized graph and its dynamic int8."""
    import onnx
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    out = os.path.join(work_dir, "onnx")
    os.makedirs(out, exist_ok=True)
    # The eager attention: the graph whose attention ONNX Runtime's optimizer fuses (transformers' SDPA export
    # leaves every attention block unfused).
    model = transformers.AlbertForSequenceClassification.from_pretrained(os.path.join(work_dir, "hf"),
                                                                         attn_implementation="eager").eval()
    ids = torch.ones([2, 16], dtype=torch.long)
    raw = os.path.join(out, "model.onnx")
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), raw,
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                    "logits": {0: "batch"}}, opset_version=17, dynamo=False)
    config = model.config
    optimized = optimizer.optimize_model(raw, model_type="bert", num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size)
    print("ONNX Runtime's fused operators:", optimized.get_fused_operator_statistics(), flush=True)
    optimized.save_model_to_file(os.path.join(out, "fp32.onnx"))
    # The fused operators are of the com.microsoft domain, which ONNX's shape inference does not type.
    quantize_dynamic(os.path.join(out, "fp32.onnx"), os.path.join(out, "int8.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    del size


# --- One measurement -------------------------------------------------------------------------------------------


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def _softmax(logits):
    import numpy as np
    logits = logits - logits.max(-1, keepdims=True)
    return np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)


def _sorted_runner(tokenizer, batch_size, forward):
    """`predict(texts) -> probabilities`: the tokenizer on all texts, batches sorted by length and padded to their
    longest, `forward(batch of NumPy features) -> logits`."""
    import numpy as np

    def predict(texts):
        encoded = tokenizer(texts, truncation=True, max_length=512)
        order = np.argsort([len(ids) for ids in encoded["input_ids"]], kind="stable")
        out = np.zeros([len(texts), 2], np.float32)
        for indices in _chunks(list(order), batch_size):
            batch = tokenizer.pad({name: [encoded[name][i] for i in indices] for name in encoded},
                                  return_tensors="np")
            out[indices] = _softmax(forward(batch))
        return out

    return predict


def _loader(route, work_dir, batch_size, threads):
    """`route`'s classifier as `predict(texts) -> probabilities [n, 2]` (loaded, not yet called)."""
    import numpy as np

    if route == "albert_tf":
        import tensorflow as tf

        import albert_tf
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        pipe = albert_tf.pipeline("text-classification", os.path.join(work_dir, "release"), batch_size=batch_size,
                                  progress=False)
        return lambda texts: np.array([r["scores"] for r in pipe(texts)])
    if route.startswith("albert_tf_int8"):
        import albert_tf
        lite_dir = os.path.join(work_dir, "lite_fixed" if route.endswith("fixed") else "lite")
        pipe = albert_tf.pipeline("text-classification", os.path.join(lite_dir, "model.tflite"),
                                  batch_size=batch_size, num_threads=threads, progress=False)
        return lambda texts: np.array([r["scores"] for r in pipe(texts)])
    import transformers
    hf_dir = os.path.join(work_dir, "hf")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)   # its spiece.model
    if route.startswith("transformers"):
        import torch
        torch.set_num_threads(threads)
        model = transformers.AlbertForSequenceClassification.from_pretrained(hf_dir).eval()
        if route == "transformers":
            pipe = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
            label = {name: index for index, name in model.config.id2label.items()}

            def in_order(texts):
                out = np.zeros([len(texts), 2], np.float32)
                for row, scores in enumerate(pipe(texts, batch_size=batch_size, truncation=True, top_k=None)):
                    for score in scores:
                        out[row, label[score["label"]]] = score["score"]
                return out

            return in_order

        def forward(batch):
            with torch.inference_mode():
                return model(**{name: torch.from_numpy(value) for name, value in batch.items()}).logits.numpy()

        return _sorted_runner(tokenizer, batch_size, forward)
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    name = {"ort_fp32": "fp32.onnx", "ort_int8": "int8.onnx"}[route]
    session = ort.InferenceSession(os.path.join(work_dir, "onnx", name), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def forward(batch):
        ids = np.asarray(batch["input_ids"], np.int64)
        # One segment: token_type_ids 0 where the tokenizer gives none.
        return session.run(None, {n: np.asarray(batch[n], np.int64) if n in batch else np.zeros_like(ids)
                                  for n in names})[0]

    return _sorted_runner(tokenizer, batch_size, forward)


def measure(args):
    """One child process: load `args.measure`, warm up on one batch, time `calls` calls on all the texts."""
    import numpy as np

    with open(os.path.join(args.work_dir, f"texts_{args.num_texts}.json"), encoding="utf-8") as f:
        texts = json.load(f)["texts"]
    start = time.perf_counter()
    predict = _loader(args.measure, args.work_dir, args.batch_size, args.threads)
    loaded = time.perf_counter() - start
    predict(texts[:args.batch_size])
    seconds, cpu = [], []
    for _ in range(args.calls):
        start, start_cpu = time.perf_counter(), time.process_time()
        probabilities = predict(texts)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    tag = os.environ.get("BENCH_TAG", args.measure)
    np.save(os.path.join(args.work_dir, f"probabilities_{tag}.npy"), np.asarray(probabilities, np.float64))
    print(json.dumps({"route": tag, "seconds": min(seconds), "cpu_seconds": cpu[seconds.index(min(seconds))],
                      "load": loaded}))


# --- The parent ------------------------------------------------------------------------------------------------


def _variants(args):
    """`(tag, route, environment)` for every measurement of a round."""
    variants = []
    for route in args.routes.split(","):
        if route not in ROUTES:
            raise SystemExit(f"Unknown route {route!r}: one of {', '.join(ROUTES)}.")
        settings = args.onednn.split(",") if route in TF_ROUTES else ["default"]
        for setting in settings:
            env = dict(os.environ)
            env.pop("TF_ENABLE_ONEDNN_OPTS", None)
            tag = route
            if setting != "default":
                env["TF_ENABLE_ONEDNN_OPTS"] = setting
                tag = f"{route}_onednn{setting}"
            variants.append((tag, route, env))
    return variants


def _child(args, tag, route, env):
    command = [sys.executable, os.path.abspath(__file__), f"--measure={route}", f"--work_dir={args.work_dir}",
               f"--batch_size={args.batch_size}", f"--num_texts={args.num_texts}", f"--threads={args.threads}",
               f"--calls={args.calls}", f"--size={args.size}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=dict(env, BENCH_TAG=tag))
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        print(f"{tag} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    result = json.loads(lines[-1])
    return result["seconds"], result["cpu_seconds"]


def run_all(args):
    import numpy as np

    prepare(args)
    variants = _variants(args)
    times, cpu = {}, {}
    for round_index in range(args.rounds):
        for tag, route, env in variants:
            measured = _child(args, tag, route, env)
            if measured is not None:
                times.setdefault(tag, []).append(measured[0])
                cpu.setdefault(tag, []).append(measured[1])
                print(f"round {round_index + 1}: {tag:24s} {measured[0]:8.2f} s ({measured[1]:.2f} s of CPU)",
                      flush=True)
    float_tag = next((tag for tag, route, _ in variants if route == "albert_tf"), None)
    reference = np.load(os.path.join(args.work_dir, f"probabilities_{float_tag}.npy")) if float_tag else None
    best = {tag: min(values) for tag, values in times.items()}
    print(f"\n| route | best s | median of rounds s | CPU s of the best | vs {float_tag or '-'} | vs ort_int8 | "
          f"max prob diff vs {float_tag or '-'} | decisions flipped |")
    print("|---|---|---|---|---|---|---|---|")
    for tag, values in times.items():
        ratio = f"{best[float_tag] / best[tag]:.2f}" if float_tag in best else "-"
        vs_ort = f"{best['ort_int8'] / best[tag]:.2f}" if "ort_int8" in best else "-"
        diff = flips = "-"
        if reference is not None:
            got = np.load(os.path.join(args.work_dir, f"probabilities_{tag}.npy"))
            diff = f"{np.max(np.abs(got - reference)):.1e}"
            flips = str(int(np.sum(got.argmax(-1) != reference.argmax(-1))))
        cpu_best = cpu[tag][values.index(best[tag])]
        print(f"| {tag} | {best[tag]:.2f} | {statistics.median(values):.2f} | {cpu_best:.2f} | {ratio} | {vs_ort} | "
              f"{diff} | {flips} |")


def main():
    args = parse_args()
    if args.prepare_onnx:
        prepare_onnx(args.work_dir, args.size)
        return
    if args.measure:
        measure(args)
        return
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)
        run_all(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench_cpu_peers_") as work_dir:
        args.work_dir = work_dir
        run_all(args)


if __name__ == "__main__":
    main()
