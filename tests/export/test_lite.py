"""LiteRT export (`albert_tf.export.lite`, `albert-export --format=tflite`): accuracy of every quantization on trained
weights against float, file sizes (the shared block stored once), every model kind, the metadata, the CLI, and
Keras `quantize` pointing at the export.

The trained model is the quickstart's (its library run with the default settings: the embedded corpus, a
SentencePiece model, SOP / n-gram TFRecords, a 4-layer all-shared ALBERT pretrained with LAMB); the classifier
is fine-tuned from it on sentence order (the SOP pairs of the corpus as a two-label task); its trained block is
also applied 12 times (`test_trained_block_...`). The 12-layer all-shared base shape is checked on seeded weights
(`test_base_...`).
References: masked-LM / SOP accuracy counted in NumPy from the records' labels and the float Keras model.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export import lite
from albert_tf.config import AlbertConfig
from albert_tf.data import features as features_lib
from albert_tf.tasks.pretraining import data as pretraining_data
from albert_tf.text import vocab as vocab_lib
from albert_tf.errors import InputError
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.checkpoints import init_from_checkpoint
from albert_tf.training import loop

SEQ = 128    # the quickstart's defaults
PRED = 20


def _records(path, limit=None):
    spec = features_lib.parse_spec(pretraining_data.PRETRAINING, seq=SEQ, pred=PRED)
    ds = tf.data.TFRecordDataset(path)
    if limit:
        ds = ds.take(limit)
    batches = [tf.io.parse_example(b, spec) for b in ds.batch(256)]
    return {k: np.concatenate([b[k].numpy() for b in batches]).astype(np.int32) for k in spec}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The quickstart's pretrained model (its library run, default settings: 1500 LAMB steps on the embedded
    corpus) and a classifier fine-tuned from it on sentence order (the SOP pairs as a two-label task)."""
    from albert_tf.quickstart.run import run_quickstart

    root = str(tmp_path_factory.mktemp("lite"))
    summary = run_quickstart(root)
    config = AlbertConfig.from_json_file(os.path.join(root, "albert_config.json"))
    pretrainer = AlbertPretrainer(config)
    init_from_checkpoint(pretrainer, loop.list_checkpoints(os.path.join(root, "pretrain"))[-1][1],
                         allow_missing_heads=False)
    heldout = _records(os.path.join(root, "heldout.tfrecord"))
    train = _records(os.path.join(root, "train.tfrecord"), limit=1024)
    tokens = ("input_ids", "input_mask", "segment_ids")
    keras.utils.set_random_seed(7)
    classifier = AlbertClassifier(config, num_labels=2)
    classifier({k: tf.constant(train[k][:1]) for k in tokens}, training=False)
    for target, source in zip(classifier.encoder.weights, pretrainer.encoder.weights):
        target.assign(source)
    classifier.compile(optimizer=keras.optimizers.Adam(2e-4))
    classifier.fit({k: train[k] for k in tokens}, train["next_sentence_labels"][:, 0], batch_size=32, epochs=1,
                   verbose=0)
    return {"root": root, "spm_model": os.path.join(root, "spm.model"), "config": config, "pretrainer": pretrainer,
            "classifier": classifier, "heldout": heldout, "chance": summary["chance"],
            "train_txt": os.path.join(root, "corpus_train.txt"),
            "records": {"train": os.path.join(root, "train.tfrecord")}}


def _mlm_sop_accuracy(run, heldout):
    """(masked-LM accuracy over the weighted positions, SOP accuracy) counted in NumPy."""
    out = run({"input_ids": heldout["input_ids"], "input_mask": heldout["input_mask"],
               "segment_ids": heldout["segment_ids"], "mlm_positions": heldout["masked_lm_positions"]})
    weights = heldout["masked_lm_weights"] > 0
    mlm = float(np.mean(np.argmax(out["mlm_logits"], -1)[weights] == heldout["masked_lm_ids"][weights]))
    sop = float(np.mean(np.argmax(out["sop_log_probs"], -1) == heldout["next_sentence_labels"][:, 0]))
    return mlm, sop


def _keras_pretrainer(model):
    def run(f):
        out = model({"input_ids": f["input_ids"], "input_mask": f["input_mask"], "segment_ids": f["segment_ids"],
                     "masked_lm_positions": f["mlm_positions"]}, training=False)
        return {"mlm_logits": out["mlm_logits"].numpy(), "sop_log_probs": out["sop_logits"].numpy()}
    return run


@pytest.fixture(scope="module")
def accuracy(trained):
    """Held-out accuracy of float Keras and of each LiteRT quantization (batch 4), printed for benchmarks/README.md."""
    pre, cls, heldout = trained["pretrainer"], trained["classifier"], trained["heldout"]
    tokens = {k: heldout[k] for k in ("input_ids", "input_mask", "segment_ids")}
    calibration = lite.calibration_features(trained["records"]["train"], pre, SEQ, batch_size=4,
                                            max_predictions_per_seq=PRED, limit=64)
    text_calibration = lite.calibration_features(trained["train_txt"], cls, SEQ, trained["spm_model"], batch_size=4,
                                                 limit=64)
    results = {"keras": {"mlm_sop": _mlm_sop_accuracy(_keras_pretrainer(pre), heldout),
                         "cls": cls(tokens, training=False)["probabilities"].numpy()}}
    sizes = {}
    for quantize in lite.QUANTIZATIONS:
        fb = lite.convert(pre, SEQ, 4, quantize, calibration if quantize == "int8" else None,
                          max_predictions_per_seq=PRED)
        fb_cls = lite.convert(cls, SEQ, 4, quantize, text_calibration if quantize == "int8" else None)
        sizes[quantize] = len(fb)
        results[quantize] = {"mlm_sop": _mlm_sop_accuracy(lite.LiteModel(fb), heldout),
                             "cls": lite.LiteModel(fb_cls)(tokens)["probabilities"]}
    labels = heldout["next_sentence_labels"][:, 0]
    report = {}
    for name, r in results.items():
        report[name] = {"mlm": r["mlm_sop"][0], "sop": r["mlm_sop"][1],
                        "cls_acc": float(np.mean(np.argmax(r["cls"], -1) == labels)),
                        "cls_agree": float(np.mean(np.argmax(r["cls"], -1)
                                                   == np.argmax(results["keras"]["cls"], -1))),
                        "cls_max_diff": float(np.max(np.abs(r["cls"] - results["keras"]["cls"]))),
                        "bytes": sizes.get(name)}
    print("\nLiteRT accuracy (held-out, %d masked tokens, %d pairs):" % (int(np.sum(heldout["masked_lm_weights"])),
                                                                         len(labels)))
    print(json.dumps(report, indent=1))
    return report


@pytest.mark.slow
def test_trained_model_learned_something(trained, accuracy):
    # The comparisons below mean something only on a model better than chance (quickstart: 0.141 vs 0.049).
    assert accuracy["keras"]["mlm"] > trained["chance"]["mlm_unigram_accuracy"] + 0.03


@pytest.mark.slow
def test_float32_matches_keras(accuracy):
    assert abs(accuracy["none"]["mlm"] - accuracy["keras"]["mlm"]) < 1e-3
    assert accuracy["none"]["sop"] == pytest.approx(accuracy["keras"]["sop"], abs=1e-3)
    assert accuracy["none"]["cls_max_diff"] < 1e-4
    assert accuracy["float16"]["cls_agree"] >= 0.99
    assert abs(accuracy["float16"]["mlm"] - accuracy["keras"]["mlm"]) <= 0.005


@pytest.mark.slow
def test_dynamic_int8_within_bounds(accuracy):
    assert abs(accuracy["dynamic"]["mlm"] - accuracy["keras"]["mlm"]) <= 0.005
    assert abs(accuracy["dynamic"]["sop"] - accuracy["keras"]["sop"]) <= 0.01
    assert accuracy["dynamic"]["cls_agree"] >= 0.99


@pytest.mark.slow
def test_full_int8_keeps_mlm_accuracy_within_its_bound(accuracy):
    """Integer activations on the quickstart's model (measured: MLM 0.1406 -> 0.1369, SOP 0.581 -> 0.575): within the
    issue's 0.01 bound on masked-LM accuracy. The sentence-order classifier on top of the same encoder, whose
    probabilities sit near 0.5 (accuracy 0.588 against a 0.518 majority), flips 21% of its decisions
    (docs/deploying_small.md), which is why `dynamic` (99.9% agreement) is the int8 export to deploy. The agreement floor
    pins that measurement, so a converter that does worse shows up."""
    assert abs(accuracy["keras"]["mlm"] - accuracy["int8"]["mlm"]) <= 0.01
    assert abs(accuracy["keras"]["sop"] - accuracy["int8"]["sop"]) <= 0.02
    assert accuracy["int8"]["cls_agree"] >= 0.7


@pytest.mark.slow
def test_quantized_files_are_smaller(accuracy):
    sizes = {q: accuracy[q]["bytes"] for q in lite.QUANTIZATIONS}
    assert sizes["float16"] < 0.7 * sizes["none"]
    assert sizes["dynamic"] < 0.5 * sizes["none"]
    assert sizes["int8"] < 0.5 * sizes["none"]


def _twelve_layer_agreement(pretrainer, heldout, limit=256):
    """The trained shared block applied 12 times instead of 4 (the same variables: every layer is the one block)
    through float Keras and LiteRT dynamic int8: held-out MLM accuracy of each and how often their argmax agree."""
    config = AlbertConfig.from_dict(dict(pretrainer.config.to_dict(), num_hidden_layers=12))
    deep = AlbertPretrainer(config)
    assert len(deep.weights) == len(pretrainer.weights)
    for target, source in zip(deep.weights, pretrainer.weights):
        target.assign(source)
    rows = {k: v[:limit] for k, v in heldout.items()}
    feats = {"input_ids": rows["input_ids"], "input_mask": rows["input_mask"], "segment_ids": rows["segment_ids"],
             "mlm_positions": rows["masked_lm_positions"]}
    weights = rows["masked_lm_weights"] > 0
    argmax = {"keras": np.argmax(_keras_pretrainer(deep)(feats)["mlm_logits"], -1)[weights]}
    argmax["dynamic"] = np.argmax(lite.LiteModel(lite.convert(deep, SEQ, 4, "dynamic", max_predictions_per_seq=PRED))(
        feats)["mlm_logits"], -1)[weights]
    targets = rows["masked_lm_ids"][weights]
    return {name: float(np.mean(a == targets)) for name, a in argmax.items()}, float(
        np.mean(argmax["dynamic"] == argmax["keras"]))


@pytest.mark.slow
def test_trained_block_applied_twelve_times_keeps_its_accuracy_in_dynamic_int8(trained):
    """The depth at which ONNX Runtime's int8 collapses ALBERT's shared block (onnxruntime #11701): the quickstart's
    trained block applied 12 times. Dynamic int8 keeps float's masked-LM accuracy and nearly every argmax
    (measured on 256 held-out rows: MLM accuracy 0.0804 float, 0.0807 dynamic; 97.6% of the argmax the same).
    The block was trained for 4 applications, so 12 give a weaker model than 4 (still above the unigram guess);
    what is tested is that quantization error does not grow with the applications until the block collapses."""
    accuracy, agreement = _twelve_layer_agreement(trained["pretrainer"], trained["heldout"])
    print("\n12 applications of the trained block: MLM accuracy", accuracy, "argmax agreement", agreement)
    assert accuracy["keras"] > trained["chance"]["mlm_unigram_accuracy"]
    assert abs(accuracy["dynamic"] - accuracy["keras"]) <= 0.005
    assert agreement >= 0.95


# --- Every model kind, on seeded tiny models (fast) ----------------------------------------------------------

TINY = dict(embedding_size=16, hidden_size=32, num_hidden_groups=1, num_attention_heads=2, intermediate_size=64,
            inner_group_num=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            max_position_embeddings=64, type_vocab_size=2)
T = 32


def _tiny_config(layers=3, vocab_size=300):
    return AlbertConfig(vocab_size=vocab_size, num_hidden_layers=layers, **TINY)


def _features(shapes, n, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        row = {}
        for name, shape in shapes.items():
            shape = shape[1:]
            if name == "input_ids":
                row[name] = rng.integers(5, 300, shape)
            elif name == "input_mask":
                length = int(rng.integers(8, T + 1))
                row[name] = (np.arange(T) < length).astype(np.int32) * np.ones(shape, np.int32)
            elif name == "segment_ids":
                row[name] = (np.arange(T) >= T // 2).astype(np.int32) * np.ones(shape, np.int32)
            else:
                row[name] = rng.integers(0, T, shape)
        rows.append(row)
    return rows


def _keras_outputs(model, batch):
    names = {"mlm_positions": "masked_lm_positions"}
    out = model({names.get(k, k): tf.constant(v, tf.int32) for k, v in batch.items()}, training=False)
    if "sop_logits" in out:
        out = dict(out, sop_log_probs=tf.nn.log_softmax(out["sop_logits"], -1))
    return {k: v.numpy() for k, v in out.items() if not isinstance(v, (list, tuple))}


KINDS = {"encoder": lambda c: AlbertModel(c), "pretrainer": lambda c: AlbertPretrainer(c),
         "classifier": lambda c: AlbertClassifier(c, num_labels=3), "squad_v1": lambda c: AlbertSquadV1(c),
         "squad_v2": lambda c: AlbertSquadV2(c), "race": lambda c: AlbertRace(c)}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_converts_with_the_serving_names(kind):
    tf.keras.utils.set_random_seed(3)
    model = KINDS[kind](_tiny_config())
    shapes = lite.input_shapes(model, 2, T, max_predictions_per_seq=5)
    batch = {k: np.stack([r[k] for r in _features(shapes, 3)])[:3] for k in shapes}   # 3 rows: a padded batch
    fb = lite.convert(model, T, batch_size=2, max_predictions_per_seq=5)
    runner = lite.LiteModel(fb)
    assert {k: list(v.shape) for k, v in runner.input_specs.items()} == shapes
    expected_outputs = {"encoder": {"sequence_output", "pooled_output"},
                        "pretrainer": {"sequence_output", "pooled_output", "mlm_logits", "sop_log_probs"},
                        "classifier": {"probabilities", "predictions"},
                        "squad_v1": {"start_logits", "end_logits"},
                        "squad_v2": {"start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                                     "cls_logits"},
                        "race": {"logits", "probabilities", "predictions"}}[kind]
    assert set(runner.output_specs) == expected_outputs
    got = runner(batch)
    reference = _keras_outputs(model, batch)
    for name in expected_outputs:
        assert got[name].shape == reference[name].shape, name
        if got[name].dtype.kind == "f":
            np.testing.assert_allclose(got[name], reference[name], atol=1e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], reference[name], err_msg=name)


def test_quantizations_stay_close_to_float():
    tf.keras.utils.set_random_seed(4)
    model = AlbertClassifier(_tiny_config(), num_labels=3)
    shapes = lite.input_shapes(model, 4, T)
    rows = _features(shapes, 40, seed=1)
    batch = {k: np.stack([r[k] for r in rows]) for k in shapes}
    reference = _keras_outputs(model, batch)["probabilities"]
    sizes = {}
    for quantize, atol in (("none", 1e-5), ("float16", 2e-3), ("dynamic", 2e-2), ("int8", 5e-2)):
        fb = lite.convert(model, T, 4, quantize, calibration=rows if quantize == "int8" else None)
        sizes[quantize] = len(fb)
        np.testing.assert_allclose(lite.LiteModel(fb)(batch)["probabilities"], reference, atol=atol, err_msg=quantize)
    assert sizes["float16"] < sizes["none"] and sizes["dynamic"] < sizes["float16"]


def test_the_shared_block_is_stored_once():
    """Twice the layers, the same weights: the file grows by the graph's ops only, not by a block of weights."""
    sizes = {}
    for layers in (6, 12):
        tf.keras.utils.set_random_seed(5)
        config = AlbertConfig(vocab_size=300, num_hidden_layers=layers, **dict(TINY, hidden_size=64,
                                                                               intermediate_size=128))
        sizes[layers] = len(lite.convert(AlbertModel(config), T))
    block = 4 * (4 * 64 * 64 + 2 * 64 * 128)   # one copy of the shared block's float32 matrices
    assert sizes[12] - sizes[6] < block        # 6 more applications: less than one more copy


def test_export_writes_metadata_config_and_tokenizer(tmp_path):
    import sentencepiece as spm

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the river {w} flows to the sea number {i}" for i, w in
                                enumerate(["amazon", "nile", "rhine", "danube"] * 20)))
    vocab_lib.train_sentencepiece([str(corpus)], str(tmp_path / "sp"), vocab_size=60, hard_vocab_limit=False)
    vocab_size = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model")).get_piece_size()
    tf.keras.utils.set_random_seed(6)
    model = AlbertClassifier(_tiny_config(2, vocab_size), num_labels=2)
    calib = tmp_path / "calib.txt"
    calib.write_text("the river nile\tflows to the sea\nthe amazon\n" * 4)
    path = lite.export_tflite(model, str(tmp_path / "out"), spm_model_file=str(tmp_path / "sp.model"),
                              max_seq_length=T, batch_size=2, quantize="int8", calibration_file=str(calib),
                              labels=["no", "yes"])
    assert path == str(tmp_path / "out" / "model.tflite")
    meta = json.loads((tmp_path / "out" / "albert_lite.json").read_text())
    assert meta["model_kind"] == "classifier" and meta["labels"] == ["no", "yes"] and meta["num_labels"] == 2
    assert meta["max_seq_length"] == T and meta["batch_size"] == 2 and meta["quantization"] == "int8"
    assert meta["signature"] == "serving_default" and meta["inputs"]["input_ids"] == [None, None]
    assert meta["dynamic_shapes"] is True   # any batch and length (tests/export/test_lite_lengths.py)
    assert meta["do_lower_case"] is True and meta["spm_model_file"] == "sp.model"
    assert json.loads((tmp_path / "out" / "albert_config.json").read_text())["vocab_size"] == vocab_size
    assert (tmp_path / "out" / "sp.model").read_bytes() == (tmp_path / "sp.model").read_bytes()
    assert not [p for p in os.listdir(tmp_path / "out") if ".tmp" in p]
    # Calibration text is packed as the runner packs it: [CLS] a [SEP] b [SEP].
    rows = lite.calibration_features(str(calib), model, T, str(tmp_path / "sp.model"))
    assert len(rows) == 8 and rows[0]["input_ids"][0] == 2 and sum(rows[0]["segment_ids"]) > 0
    assert sum(rows[1]["segment_ids"]) == 0


def test_text_calibration_is_packed_by_each_kind_serving_spec(tmp_path):
    """`calibration_features` on raw text asks the kind's serving spec how to pack a line: SQuAD question and
    context in doc-stride windows, RACE article, question and 4 options, the pretrainer's masked positions."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"the river {w} flows to the sea number {i}" for i, w in
                                enumerate(["amazon", "nile", "rhine", "danube"] * 20)))
    vocab_lib.train_sentencepiece([str(corpus)], str(tmp_path / "sp"), vocab_size=60, hard_vocab_limit=False)
    spm_file = str(tmp_path / "sp.model")
    import sentencepiece as spm

    config = AlbertConfig(vocab_size=spm.SentencePieceProcessor(model_file=spm_file).get_piece_size(),
                          num_hidden_layers=1, **dict(TINY, max_position_embeddings=128))
    seq = 96   # SQuAD windows keep 64 question pieces: max_seq_length > 64 + 3
    lines = {"squad_v2": "what flows ?\t" + "the river nile flows to the sea " * 12,
             "race": "the river nile flows to the sea\twhat flows ?\tthe nile\tthe sea\tthe rhine\tthe amazon",
             "pretrainer": "the river nile\tflows to the sea"}
    for kind, line in lines.items():
        path = tmp_path / f"{kind}.txt"
        path.write_text(line + "\n")
        rows = lite.calibration_features(str(path), KINDS[kind](config), seq, spm_file, max_predictions_per_seq=3)
        shapes = lite.input_shapes(KINDS[kind](config), 1, seq, max_predictions_per_seq=3)
        assert rows and all(sorted(row) == sorted(shapes) for row in rows), kind
        for row in rows:
            for name, shape in shapes.items():
                assert np.asarray(row[name]).shape == tuple(shape[1:]), (kind, name)
    assert len(lite.calibration_features(str(tmp_path / "squad_v2.txt"), KINDS["squad_v2"](config), seq,
                                         spm_file)) > 1      # a long context: several windows
    with pytest.raises(InputError, match="line 1: expected `question<TAB>context` for squad_v1 calibration"):
        lite.calibration_features(str(tmp_path / "race.txt"), KINDS["squad_v1"](config), seq, spm_file)
    with pytest.raises(InputError, match="line 1: expected `article<TAB>question<TAB>` and 4 options"):
        lite.calibration_features(str(tmp_path / "pretrainer.txt"), KINDS["race"](config), seq, spm_file)


def test_bad_arguments_are_input_errors(tmp_path):
    model = AlbertModel(_tiny_config(1))
    with pytest.raises(InputError, match="`quantize` must be one of none, float16, dynamic, int8"):
        lite.convert(model, T, quantize="int4")
    with pytest.raises(InputError, match="pass `calibration_file`"):
        lite.convert(model, T, quantize="int8")
    with pytest.raises(InputError, match="sequence length 128 because the ALBERT model was only trained up to"):
        lite.convert(model, 128)
    with pytest.raises(InputError, match="`calibration_file` not found"):
        lite.calibration_features(str(tmp_path / "missing.txt"), model, T)
    (tmp_path / "x.tflite").write_bytes(b"")
    with pytest.raises(InputError, match="no `albert_lite.json` beside it"):
        lite.find_export(str(tmp_path / "x.tflite"))
    with pytest.raises(InputError, match="`labels` has 2 names"):
        lite.export_tflite(AlbertClassifier(_tiny_config(1), num_labels=3), str(tmp_path / "o"), max_seq_length=T,
                           labels=["a", "b"])


def test_keras_quantize_modes_other_than_int8_point_to_the_lite_export():
    """Keras' `quantize("int8")` works (tests/models/test_keras_backends.py measures it); the other modes are refused
    with the LiteRT export named."""
    for model in (AlbertClassifier(_tiny_config(1), num_labels=2), AlbertModel(_tiny_config(1))):
        for mode in ("int4", "float8"):
            with pytest.raises(InputError, match="--format=tflite --quantize=dynamic|int8"):
                model.quantize(mode)


@pytest.mark.e2e
def test_albert_export_cli_writes_a_tflite_model(tmp_path):
    from albert_tf.checkpoints import save_tf1_checkpoint

    tf.keras.utils.set_random_seed(8)
    config = _tiny_config(2)
    model = AlbertSquadV1(config)
    model({"input_ids": tf.ones([1, 8], tf.int32), "input_mask": tf.ones([1, 8], tf.int32),
           "segment_ids": tf.zeros([1, 8], tf.int32)})
    save_tf1_checkpoint(model, str(tmp_path / "model.ckpt-1"))
    config.to_json_file(str(tmp_path / "albert_config.json"))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={tmp_path / 'model.ckpt-1'}", f"--albert_config_file={tmp_path / 'albert_config.json'}",
           "--model=squad_v1", f"--export_dir={tmp_path / 'lite'}", "--format=tflite", "--quantize=dynamic",
           f"--max_seq_length={T}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / "lite" / "model.tflite")
    meta = json.loads((tmp_path / "lite" / "albert_lite.json").read_text())
    assert meta["model_kind"] == "squad_v1" and meta["quantization"] == "dynamic"
    assert meta["batch_size"] == 32 and meta["dynamic_shapes"] is True   # the defaults: the pipelines' batch, resizable
    runner = lite.LiteModel(str(tmp_path / "lite" / "model.tflite"))
    batch = {k: np.stack([r[k] for r in _features(lite.input_shapes(model, 1, T), 1)]) for k in runner.input_specs}
    np.testing.assert_allclose(runner(batch)["start_logits"], _keras_outputs(model, batch)["start_logits"], atol=0.05)
    proc = subprocess.run(cmd[:-2] + ["--quantize=int8", f"--max_seq_length={T}", "--overwrite"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode != 0 and "calibration_file" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-export", "--input=x", "--export_dir=y", "--quantize=dynamic"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode != 0 and "--quantize applies to --format=tflite or mediapipe only" in proc.stderr


@pytest.mark.slow
def test_base_file_sizes_and_the_shared_block_at_24_layers():
    """albert-base (seeded weights): float32 <= 48 MB, int8 <= 13 MB; 24 layers cost the ops, not the weights."""
    base = AlbertConfig.from_preset("base_v2")
    seq = 128
    sizes, agreement = {}, {}
    for layers in (12, 24):
        tf.keras.utils.set_random_seed(9)
        model = AlbertModel(AlbertConfig.from_dict(dict(base.to_dict(), num_hidden_layers=layers)))
        quantizations = ("none", "dynamic", "int8") if layers == 12 else ("none",)
        for quantize in quantizations:
            rng = np.random.default_rng(2)
            rows = [{"input_ids": rng.integers(5, base.vocab_size, seq), "input_mask": np.ones(seq, np.int32),
                     "segment_ids": np.zeros(seq, np.int32)} for _ in range(4)] if quantize == "int8" else None
            fb = lite.convert(model, seq, quantize=quantize, calibration=rows)
            sizes[(layers, quantize)] = len(fb)
            if layers == 12:   # The shared block applied 12 times must not collapse (as in ONNX Runtime int8).
                ids = np.random.default_rng(3).integers(5, base.vocab_size, [1, seq]).astype(np.int32)
                feats = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
                got = lite.LiteModel(fb)(feats)["sequence_output"].ravel()
                want = _keras_outputs(model, feats)["sequence_output"].ravel()
                cosine = float(np.dot(got, want) / np.linalg.norm(got) / np.linalg.norm(want))
                agreement[quantize] = (float(np.max(np.abs(got - want))), cosine)
    print("\nbase sizes (bytes):", {f"L={k[0]} {k[1]}": v for k, v in sizes.items()})
    print("base sequence_output vs Keras (max abs diff, cosine):", agreement)
    assert agreement["none"][0] < 1e-3
    assert agreement["dynamic"][1] > 0.99 and agreement["int8"][1] > 0.95
    assert sizes[(12, "none")] <= 48e6
    assert sizes[(12, "dynamic")] <= 13e6 and sizes[(12, "int8")] <= 13e6
    # One more copy of the block would be 28 MB; 12 more applications add their op records only.
    assert sizes[(24, "none")] - sizes[(12, "none")] < 200e3
