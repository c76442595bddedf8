"""Computes the tests' tf-models-official references once and stores them next to this file.

tf-models-official (with tf-keras) pins `tensorflow~=2.20.0` and a long tail of packages, so it is no test
dependency: its outputs on the tests' own fixtures are computed here, in an environment that has it, and the
tests read the stored files. Every reference is computed by tf-models-official itself (its checkpoint converter
and `AlbertEncoder`, its `export_tfhub_lib`, `squad_lib_sp`, the SQuAD evaluators, `tokenization.py`); albert_tf
only writes one input (the TF1 checkpoint of `tfm_checkpoint.npz`'s "ours" row, in its own process).

Command (from the repository root, in a TensorFlow 2.20 environment with the test extra plus
`tf-models-official==2.20.0 tf-keras==2.20.1`):

    PYTHONPATH=$PWD:$PWD/tests:$PWD/tests/tasks/squad TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES= \\
        python tests/references/make_tfm_references.py

It rewrites (and the tests read):
  tfm_checkpoint.npz           converter + AlbertEncoder on test_checkpoints.py's G1K1 release ("google") and on
                               albert_tf's TF1 checkpoint of it ("ours"), with the inputs and our checkpoint's names
  tfm_saved_models.tar.gz      export_tfhub_lib SavedModels (E_ne_H/, E_eq_H/) and their outputs (result.npz)
  tfm_squad_features.json.gz   squad_lib_sp features of squad_fixtures' v2 set, tokenized by its SentencePiece model
  tfm_squad_metrics.json       squad_evaluate_v1_1 / squad_evaluate_v2_0 on test_squad_postprocess.py's predictions
  tfm_tokenization.json.gz     tokenization.py's BasicTokenizer / WordpieceTokenizer / helpers on random texts

Each part runs in its own process (`--part=NAME`), so Keras 3 (albert_tf) and tf-keras never share one.
"""

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ("ours_checkpoint", "checkpoint", "saved_models", "squad", "metrics", "tokenization")


def _release(work):
    """test_checkpoints.py's G1K1 release directory (NumPy weights, `tf.compat.v1` Saver) and its inputs."""
    import test_checkpoints as tc
    import numpy_reference as ref

    config = tc.CONFIGS["G1K1"]
    weights = ref.random_weights(config, np.random.default_rng(100), heads=True)
    directory = tc.write_release_dir(os.path.join(work, "albert_G1K1"), config, weights)
    return directory, tc.make_inputs()


def part_ours_checkpoint(work):
    """albert_tf's TF1 checkpoint of the release (the input of the "ours" reference row)."""
    from albert_tf import AlbertModel
    from albert_tf.checkpoints import save_tf1_checkpoint

    directory, _ = _release(work)
    model = AlbertModel.from_pretrained(directory)
    save_tf1_checkpoint(model, os.path.join(work, "ours", "model.ckpt-best"))


def part_checkpoint(work):
    import tensorflow as tf
    from official.legacy.albert import configs
    from official.nlp.tools import tf2_albert_encoder_checkpoint_converter as conv

    directory, (ids, mask, seg) = _release(work)
    cfg = configs.AlbertConfig.from_json_file(os.path.join(directory, "albert_config.json"))
    ours = os.path.join(work, "ours", "model.ckpt-best")
    results = dict(ids=ids, mask=mask, seg=seg)
    for tag, ckpt in (("google", os.path.join(directory, "model.ckpt-best")), ("ours", ours)):
        out_dir = os.path.join(work, "tf_models_" + tag)
        os.makedirs(os.path.join(out_dir, "temp_v1"))  # The converter fails without it.
        conv.convert_checkpoint(cfg, os.path.join(out_dir, "encoder"), ckpt, "encoder", converted_model="encoder")
        encoder = conv._create_albert_model(cfg)
        tf.train.Checkpoint(encoder=encoder).read(
            tf.train.latest_checkpoint(out_dir)).assert_existing_objects_matched().expect_partial()
        seq, pooled = encoder(dict(input_word_ids=ids, input_mask=mask, input_type_ids=seg), training=False)
        results[tag + "_sequence_output"] = seq.numpy()
        results[tag + "_pooled_output"] = pooled.numpy()
    shapes = tf.train.load_checkpoint(ours).get_variable_to_shape_map()
    results["ours_names"] = np.array(sorted(shapes))
    np.savez_compressed(os.path.join(HERE, "tfm_checkpoint.npz"), **results)


def part_saved_models(work):
    import tensorflow as tf
    from official.nlp.configs import encoders
    from official.nlp.tools import export_tfhub_lib
    import foreign_fixtures as tfw

    out_dir = os.path.join(work, "tfm_saved_models")
    os.makedirs(out_dir)
    ids, mask, seg = tfw.make_inputs()
    results = dict(ids=ids, mask=mask, seg=seg)
    spm = os.path.join(work, "30k-clean.model")
    with open(spm, "wb") as f:
        f.write(tfw.SPM_BYTES)
    for tag, layers, embedding in (("E_ne_H", 3, 8), ("E_eq_H", 2, 16)):
        cfg = encoders.EncoderConfig(type="albert", albert=encoders.AlbertEncoderConfig(
            vocab_size=61, embedding_width=embedding, hidden_size=16, num_layers=layers, num_attention_heads=2,
            intermediate_size=24, max_position_embeddings=32, type_vocab_size=2, hidden_activation="gelu",
            dropout_rate=0.0, attention_dropout_rate=0.0))
        encoder = encoders.build_encoder(cfg)
        rng = np.random.default_rng(91)
        for weight in encoder.weights:
            weight.assign(rng.normal(scale=0.3, size=weight.shape).astype(np.float32))
        ckpt = tf.train.Checkpoint(encoder=encoder).save(os.path.join(work, tag + "_ckpt", "ckpt"))
        export = os.path.join(out_dir, tag)
        export_tfhub_lib.export_model(export, encoder_config=cfg, model_checkpoint_path=ckpt, with_mlm=False,
                                      sp_model_file=spm)
        hub = tf.saved_model.load(export)
        outputs = hub(dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
                           input_type_ids=tf.constant(seg)), training=False)
        results[tag + "_sequence_output"] = outputs["sequence_output"].numpy()
        results[tag + "_pooled_output"] = outputs["pooled_output"].numpy()
    np.savez_compressed(os.path.join(out_dir, "result.npz"), **results)
    with tarfile.open(os.path.join(HERE, "tfm_saved_models.tar.gz"), "w:gz", compresslevel=9) as tar:
        for entry in sorted(os.listdir(out_dir)):
            tar.add(os.path.join(out_dir, entry), arcname=entry)


SQUAD_FIELDS = ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index", "tok_end_to_orig_index",
                "token_is_max_context", "tokens", "input_ids", "input_mask", "segment_ids", "paragraph_len",
                "start_position", "end_position", "is_impossible", "paragraph_mask")


def part_squad(work):
    import sentencepiece as spm
    from official.nlp.data import squad_lib_sp
    import squad_fixtures as fx
    import test_squad as ts

    spm_file = fx.train_spm(work)
    v2 = fx.write_squad(os.path.join(work, "v2.json"), with_negative=True)
    tokenizer = types.SimpleNamespace(sp_model=spm.SentencePieceProcessor(model_file=spm_file))
    out = {"max_seq_length": ts.MAX_SEQ, "doc_stride": ts.STRIDE, "max_query_length": ts.MAX_QUERY}
    for is_training in (True, False):
        theirs = []
        examples = squad_lib_sp.read_squad_examples(v2, is_training=is_training, version_2_with_negative=True)
        squad_lib_sp.convert_examples_to_features(
            examples, tokenizer, ts.MAX_SEQ, ts.STRIDE, ts.MAX_QUERY, is_training,
            (lambda f, is_padding=False: theirs.append(f)), do_lower_case=True, batch_size=1)
        rows = []
        for feature in theirs:
            row = {name: getattr(feature, name) for name in SQUAD_FIELDS}
            row["token_is_max_context"] = sorted(row["token_is_max_context"].items())
            row["is_impossible"] = bool(row["is_impossible"])
            rows.append(row)
        out["training" if is_training else "evaluation"] = rows
    _write_json("tfm_squad_features.json.gz", out)


def part_metrics(work):
    from official.nlp.tools import squad_evaluate_v1_1, squad_evaluate_v2_0
    import test_squad_postprocess as tp

    v1_dataset, v1_preds = tp.v1_metrics_inputs()
    v2_dataset, v2_preds, na_probs = tp.v2_metrics_inputs()
    _write_json("tfm_squad_metrics.json", {
        "v1": squad_evaluate_v1_1.evaluate(v1_dataset, v1_preds),
        "v2": squad_evaluate_v2_0.evaluate(v2_dataset, v2_preds, na_probs)})


def part_tokenization(work):
    from official.nlp.tools import tokenization as tfm
    import test_tokenization as tt

    texts, vocab = tt.wordpiece_inputs()
    out = {"texts": texts, "vocab": vocab}
    for lower in (True, False):
        basic, wordpiece = tfm.BasicTokenizer(lower), tfm.WordpieceTokenizer(vocab, max_input_chars_per_word=200)
        tokens = [basic.tokenize(text) for text in texts]
        out[f"basic_lower={lower}"] = tokens
        out[f"wordpiece_lower={lower}"] = [wordpiece.tokenize(" ".join(t)) for t in tokens]
    inputs = texts + [tt.BYTES_TEXT]
    out["convert_to_unicode"] = [tfm.convert_to_unicode(t) for t in inputs]
    out["printable_text"] = [tfm.printable_text(t) for t in inputs]
    out["whitespace_tokenize"] = [tfm.whitespace_tokenize(tfm.convert_to_unicode(t)) for t in inputs]
    _write_json("tfm_tokenization.json.gz", out)


def _write_json(name, value):
    data = (json.dumps(value, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
    path = os.path.join(HERE, name)
    if name.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:  # mtime=0: the same references give the same bytes.
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=PARTS, help="run one part in this process (default: each in its own)")
    parser.add_argument("--work", help="scratch directory shared by the parts")
    args = parser.parse_args()
    random.seed(0)
    if args.part:
        globals()["part_" + args.part](args.work)
        return
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    env.pop("TF_USE_LEGACY_KERAS", None)
    with tempfile.TemporaryDirectory() as work:
        for part in PARTS:
            print("==", part, flush=True)
            subprocess.run([sys.executable, os.path.abspath(__file__), f"--part={part}", f"--work={work}"],
                           check=True, env=env)


if __name__ == "__main__":
    main()
