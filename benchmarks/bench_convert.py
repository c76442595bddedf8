"""Memory and time of reading and writing a release-sized checkpoint (not a test; run by hand).

    python benchmarks/bench_convert.py --preset=xxlarge_v2 --work_dir=/tmp/bench_convert

Fabricates a random checkpoint with the original names and shapes of `--preset` (xxlarge: ~0.9 GB of float32
weights incl. pretraining heads; `--optimizer_slots` adds `adam_m`/`adam_v`, tripling the file) in a child
process, then in this process: builds an `AlbertPretrainer`, restores the checkpoint, writes it back as a TF1
checkpoint, as Keras `.weights.h5`, as a Hugging Face directory (safetensors) and as a keras-hub preset, and
reads the last two back, sampling the resident set size every 5 ms. With `--saved_model`, a child process
(tf_keras) also exports tf-models-official's `AlbertEncoder` of the same shapes as a TF2 SavedModel with
`export_tfhub_lib`, which is then read. Reports the RSS after each phase and the peak during it; the extra
memory of a phase over the model itself is what streaming saves.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class PeakRss:
    """Samples RSS in a thread; `peak` is the maximum since the last `reset()`."""

    def __init__(self, interval=0.005):
        self.interval = interval
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(self.interval)

    def reset(self):
        self.peak = rss_bytes()

    def stop(self):
        self._stop.set()
        self._thread.join()


def fabricate(config, prefix, optimizer_slots):
    """Child-process step: random weights under the original names, written with `SaveV2`."""
    import tensorflow as tf  # Deferred: the children import only what they use (see `main`).

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    import numpy_reference

    weights = numpy_reference.random_weights(config, np.random.default_rng(0), heads=True)
    if optimizer_slots:
        for name in list(weights):
            weights[name + "/adam_m"] = weights[name] * 0.5
            weights[name + "/adam_v"] = weights[name] * 0.25
    weights["global_step"] = np.array(125000, np.int64)
    names = sorted(weights)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(weights[n]) for n in names])
    print(json.dumps({"variables": len(names), "bytes": int(sum(weights[n].nbytes for n in names))}))


def fabricate_saved_model(config, work_dir):
    """Child-process step: tf-models' AlbertEncoder of `config` (random), exported as TF-Hub does."""
    import tensorflow as tf  # Deferred: this child runs tf_keras and must not load Keras 3 models.
    from official.nlp.configs import encoders
    from official.nlp.tools import export_tfhub_lib

    cfg = encoders.EncoderConfig(type="albert", albert=encoders.AlbertEncoderConfig(
        vocab_size=config["vocab_size"], embedding_width=config["embedding_size"], hidden_size=config["hidden_size"],
        num_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
        intermediate_size=config["intermediate_size"], max_position_embeddings=config["max_position_embeddings"],
        type_vocab_size=config["type_vocab_size"], hidden_activation="gelu", dropout_rate=0.0,
        attention_dropout_rate=0.0))
    encoder = encoders.build_encoder(cfg)
    ckpt = tf.train.Checkpoint(encoder=encoder).save(os.path.join(work_dir, "saved_model_ckpt", "ckpt"))
    spm = os.path.join(work_dir, "30k-clean.model")
    with open(spm, "wb") as f:
        f.write(b"placeholder sentencepiece model")
    export_tfhub_lib.export_model(os.path.join(work_dir, "saved_model"), encoder_config=cfg,
                                  model_checkpoint_path=ckpt, with_mlm=False, sp_model_file=spm)
    print(json.dumps({"exported": True}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="xxlarge_v2")
    parser.add_argument("--work_dir", default="/tmp/albert_bench_convert")
    parser.add_argument("--optimizer_slots", action="store_true")
    parser.add_argument("--refabricate", action="store_true", help="rewrite the checkpoint even if present")
    parser.add_argument("--saved_model", action="store_true",
                        help="also export and read a TF2 SavedModel of tf-models' AlbertEncoder")
    parser.add_argument("--fabricate_only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--saved_model_only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    # Imports are deferred throughout: the fabricating children are this file too, and one of them runs tf_keras
    # (tf-models), which does not mix with the Keras 3 models imported for the measured phases.
    from albert_tf.config import AlbertConfig

    config = AlbertConfig.from_preset(args.preset).to_dict()
    os.makedirs(args.work_dir, exist_ok=True)
    release = os.path.join(args.work_dir, "release")
    prefix = os.path.join(release, "model.ckpt-best")
    if args.fabricate_only:
        fabricate(config, prefix, args.optimizer_slots)
        return
    if args.saved_model_only:
        fabricate_saved_model(config, args.work_dir)
        return
    os.makedirs(release, exist_ok=True)
    with open(os.path.join(release, "albert_config.json"), "w") as f:
        json.dump(config, f)
    start = time.time()
    if os.path.exists(prefix + ".index") and not args.refabricate:
        print(f"reusing {prefix}")
    else:
        child = subprocess.run([sys.executable, __file__, "--fabricate_only", f"--preset={args.preset}",
                                f"--work_dir={args.work_dir}"]
                               + (["--optimizer_slots"] if args.optimizer_slots else []),
                               capture_output=True, text=True, check=True)
        made = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"fabricated {made['variables']} variables, {made['bytes'] / 2**30:.3f} GiB, "
              f"in {time.time() - start:.1f} s")

    saved_model_dir = os.path.join(args.work_dir, "saved_model")
    if args.saved_model and (args.refabricate or not os.path.exists(os.path.join(saved_model_dir, "saved_model.pb"))):
        start = time.time()
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        env.pop("TF_USE_LEGACY_KERAS", None)
        subprocess.run([sys.executable, __file__, "--saved_model_only", f"--preset={args.preset}",
                        f"--work_dir={args.work_dir}"], capture_output=True, text=True, check=True, env=env)
        print(f"exported tf-models AlbertEncoder SavedModel in {time.time() - start:.1f} s")

    import keras
    import tensorflow as tf  # noqa: F401  (imported before measuring, like any user program)

    from albert_tf.checkpoints import hf, init_from_checkpoint, keras_hub, save_tf1_checkpoint, table
    from albert_tf.checkpoints.convert import tf1_values
    from albert_tf import AlbertPretrainer

    sampler = PeakRss()
    rows = []

    def phase(name, fn):
        sampler.reset()
        before = rss_bytes()
        t0 = time.time()
        out = fn()
        seconds = time.time() - t0
        rows.append((name, before, rss_bytes(), sampler.peak, seconds))
        return out

    model = phase("build AlbertPretrainer", lambda: AlbertPretrainer(config))
    model_bytes = sum(int(np.prod(v.shape)) * 4 for v in model.weights)
    phase("restore TF1 checkpoint", lambda: init_from_checkpoint(model, release))
    tf1_prefix = os.path.join(args.work_dir, "tf1", "model.ckpt-best")
    phase("write TF1 checkpoint", lambda: save_tf1_checkpoint(model, tf1_prefix))
    os.makedirs(os.path.join(args.work_dir, "keras"), exist_ok=True)
    phase("write .weights.h5", lambda: model.save_weights(os.path.join(args.work_dir, "keras", "model.weights.h5")))
    albert_config = AlbertConfig.from_dict(config)
    hf_dir, kh_dir = os.path.join(args.work_dir, "hf"), os.path.join(args.work_dir, "keras_hub")
    for directory in (hf_dir, kh_dir):
        os.makedirs(directory, exist_ok=True)
    phase("write HF safetensors", lambda: hf.write(tf1_values(model), albert_config, table.model_components(model),
                                                    hf_dir))
    phase("write keras-hub preset", lambda: keras_hub.write(tf1_values(model, {table.ENCODER}), albert_config,
                                                             kh_dir))
    phase("read HF safetensors", lambda: init_from_checkpoint(model, hf_dir))
    phase("read keras-hub preset", lambda: init_from_checkpoint(model.encoder, kh_dir))
    if args.saved_model:
        phase("read TF2 SavedModel", lambda: init_from_checkpoint(model.encoder, saved_model_dir))
    sampler.stop()

    gib = 2 ** 30
    print(f"preset {args.preset}: model weights {model_bytes / gib:.3f} GiB ({len(model.weights)} variables), "
          f"keras {keras.__version__}")
    print(f"{'phase':<26}{'RSS before':>12}{'RSS after':>12}{'peak':>10}{'peak-before':>13}{'seconds':>9}")
    for name, before, after, peak, seconds in rows:
        print(f"{name:<26}{before / gib:>11.3f}G{after / gib:>11.3f}G{peak / gib:>9.3f}G"
              f"{(peak - before) / gib:>12.3f}G{seconds:>9.1f}")
    print(f"peak RSS of the process: {max(r[3] for r in rows) / gib:.3f} GiB")


if __name__ == "__main__":
    main()
