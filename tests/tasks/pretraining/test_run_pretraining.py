"""run_pretraining: the TFRecord reader, train + eval end to end, resume, init from Google-format checkpoints."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.checkpoints.writer import tf1_tensors
from albert_tf.data import features as features_lib
from albert_tf.tasks.pretraining.inputs import expand_input_files, pretraining_dataset
from albert_tf.training import loop
from albert_tf.tasks.pretraining import task as pretraining
from albert_tf.tasks.pretraining.task import run_pretraining
import original_checkpoints as oc
from recording import Built, recording
from repo_paths import REPO

SEQ, PRED, VOCAB = 16, 4, 40
CONFIG = dict(vocab_size=VOCAB, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=32, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, hidden_act="gelu", initializer_range=0.02, type_vocab_size=2,
              num_hidden_groups=1, inner_group_num=1, down_scale_factor=1)


def _example(rng, index, seq=SEQ, pred=PRED):
    """One record of the original schema (`write_instance_to_example_files`); `input_ids[1]` carries the record index for order checks."""
    length = rng.randint(seq // 2, seq + 1)
    ids = [2] + list(rng.randint(5, VOCAB, size=length - 2)) + [3]
    ids[1] = 5 + index % (VOCAB - 5)
    num_masked = rng.randint(1, pred + 1)
    positions = sorted(rng.choice(np.arange(2, length - 1), size=num_masked, replace=False))
    pad = seq - length
    feature = {
        "input_ids": features_lib.int64_feature(ids + [0] * pad),
        "input_mask": features_lib.int64_feature([1] * length + [0] * pad),
        "segment_ids": features_lib.int64_feature([0] * (length // 2) + [1] * (length - length // 2) + [0] * pad),
        "token_boundary": features_lib.int64_feature([1] * seq),
        "masked_lm_positions": features_lib.int64_feature(list(positions) + [0] * (pred - num_masked)),
        "masked_lm_ids": features_lib.int64_feature([ids[p] for p in positions] + [0] * (pred - num_masked)),
        "masked_lm_weights": features_lib.float_feature([1.0] * num_masked + [0.0] * (pred - num_masked)),
        "next_sentence_labels": features_lib.int64_feature([int(rng.randint(0, 2))]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretraining_data")
    rng = np.random.RandomState(0)
    index = 0
    for shard in range(3):
        with tf.io.TFRecordWriter(str(root / f"part-{shard}.tfrecord")) as writer:
            for _ in range(12):
                writer.write(_example(rng, index))
                index += 1
    with tf.io.TFRecordWriter(str(root / "other.rec")) as writer:
        writer.write(_example(rng, 99))
    config_file = root / "albert_config.json"
    config_file.write_text(json.dumps(CONFIG))
    return root


def test_expand_input_files(data):
    files = expand_input_files(f"{data}/part-*.tfrecord,{data}/other.rec")
    assert [os.path.basename(f) for f in files] == ["part-0.tfrecord", "part-1.tfrecord", "part-2.tfrecord",
                                                     "other.rec"]
    with pytest.raises(ValueError, match="matched no file"):
        expand_input_files(f"{data}/part-*.tfrecord,{data}/missing-*")


def test_train_and_eval_datasets(data):
    files = expand_input_files(f"{data}/part-*.tfrecord")
    train = pretraining_dataset(files, SEQ, PRED, batch_size=5, is_training=True, seed=3)
    spec = train.element_spec
    assert sorted(spec) == sorted(["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                                   "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"])
    assert spec["input_ids"].shape.as_list() == [5, SEQ] and spec["input_ids"].dtype == tf.int32
    assert spec["masked_lm_positions"].shape.as_list() == [5, PRED]
    assert spec["masked_lm_weights"].dtype == tf.float32
    assert spec["next_sentence_labels"].shape.as_list() == [5, 1]
    seen = [int(x) for batch in train.take(8) for x in batch["input_ids"][:, 1].numpy()]
    assert len(set(seen)) > 20                      # repeats forever across all three files
    assert seen[:12] != list(range(5, 17))          # shuffled
    # Same seed, same order (the iterator position is what the loop checkpoints).
    again = [int(x) for batch in pretraining_dataset(files, SEQ, PRED, 5, True, seed=3).take(8)
             for x in batch["input_ids"][:, 1].numpy()]
    assert again == seen
    # Eval: sequential over the files in order, repeated, drop_remainder.
    evaluation = pretraining_dataset(files, SEQ, PRED, batch_size=5, is_training=False)
    order = [int(x) for batch in evaluation.take(8) for x in batch["input_ids"][:, 1].numpy()]
    assert order == [5 + (i % 36) % 35 for i in range(40)]
    # Two input pipelines read disjoint file shards.
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=2)
    shard = pretraining_dataset(files, SEQ, PRED, 4, True, input_context=context, seed=1)
    assert {int(x) for b in shard.take(6) for x in b["input_ids"][:, 1].numpy()} <= set(range(17, 29))


def test_bad_inputs(data):
    files = expand_input_files(f"{data}/part-0.tfrecord")
    with pytest.raises(ValueError, match="online masking"):
        pretraining_dataset(files, SEQ, PRED, 2, True, masked_lm_budget=0.5)
    with pytest.raises(ValueError, match="max_seq_length"):
        run_pretraining(str(data / "albert_config.json"), str(files[0]), str(data / "bad"), max_seq_length=12,
                        max_predictions_per_seq=PRED, train_batch_size=2, num_train_steps=1)
    with pytest.raises(ValueError, match="do_train"):
        run_pretraining(str(data / "albert_config.json"), str(files[0]), str(data / "bad"), do_train=False)


def _run(data, output_dir, **kwargs):
    args = dict(albert_config_file=str(data / "albert_config.json"), input_file=f"{data}/part-*.tfrecord",
                output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PRED,
                train_batch_size=4, eval_batch_size=6, learning_rate=5e-3, num_train_steps=6, num_warmup_steps=2,
                save_checkpoints_steps=3, iterations_per_loop=3, max_eval_steps=3, seed=1)
    args.update(kwargs)
    return run_pretraining(**args)


@pytest.mark.e2e
def test_train_eval_and_resume(data, tmp_path):
    out = tmp_path / "out"
    results = _run(data, out, do_eval=True)
    assert results["train"]["global_step"] == 6
    assert [s for s, _ in loop.list_checkpoints(str(out))] == [3, 6]
    text = (out / "eval_results.txt").read_text()
    for key in ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy", "sentence_order_loss",
                "global_step = 3", "global_step = 6"):
        assert key in text
    best = results["eval"]
    assert 0.0 <= best["masked_lm_accuracy"] <= 1.0 and best["masked_lm_loss"] > 0
    assert (out / "model.ckpt-best.index").exists()
    step, best_step, value = (out / "best_trial.txt").read_text().split(":")
    assert int(step) == 6 and int(best_step) == best["global_step"]
    assert float(value) == pytest.approx(best["masked_lm_accuracy"])
    # A restarted job with more steps resumes at 6 (step, slots) and trains to 9.
    again = _run(data, out, num_train_steps=9)
    assert again["train"]["global_step"] == 9
    assert [s for s, _ in loop.list_checkpoints(str(out))] == [3, 6, 9]


# -------------------------------------------------------------------------------------------------------
# Google-format (TF1) checkpoint with the original variable names (as Google's releases), written with
# tf.compat.v1 so the test does not depend on our own writer.

def _tf1_names_and_shapes(h=16, e=8, i=32, v=VOCAB, p=SEQ, groups=(0,)):
    shapes = {
        "bert/embeddings/word_embeddings": [v, e], "bert/embeddings/token_type_embeddings": [2, e],
        "bert/embeddings/position_embeddings": [p, e], "bert/embeddings/LayerNorm/beta": [e],
        "bert/embeddings/LayerNorm/gamma": [e], "bert/encoder/embedding_hidden_mapping_in/kernel": [e, h],
        "bert/encoder/embedding_hidden_mapping_in/bias": [h], "bert/pooler/dense/kernel": [h, h],
        "bert/pooler/dense/bias": [h], "cls/predictions/transform/dense/kernel": [h, e],
        "cls/predictions/transform/dense/bias": [e], "cls/predictions/transform/LayerNorm/beta": [e],
        "cls/predictions/transform/LayerNorm/gamma": [e], "cls/predictions/output_bias": [v],
        "cls/seq_relationship/output_weights": [2, h], "cls/seq_relationship/output_bias": [2],
    }
    for g in groups:
        block = f"bert/encoder/transformer/group_{g}/inner_group_0"
        for name in ("query", "key", "value"):
            shapes[f"{block}/attention_1/self/{name}/kernel"] = [h, h]
            shapes[f"{block}/attention_1/self/{name}/bias"] = [h]
        shapes.update({
            f"{block}/attention_1/output/dense/kernel": [h, h], f"{block}/attention_1/output/dense/bias": [h],
            f"{block}/LayerNorm/beta": [h], f"{block}/LayerNorm/gamma": [h],
            f"{block}/ffn_1/intermediate/dense/kernel": [h, i], f"{block}/ffn_1/intermediate/dense/bias": [i],
            f"{block}/ffn_1/intermediate/output/dense/kernel": [i, h],
            f"{block}/ffn_1/intermediate/output/dense/bias": [h],
            f"{block}/LayerNorm_1/beta": [h], f"{block}/LayerNorm_1/gamma": [h]})
    return shapes


@pytest.fixture(scope="module")
def google_checkpoint(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("google") / "model.ckpt-1000")
    rng = np.random.RandomState(5)
    values = {name: rng.normal(scale=0.05, size=shape).astype(np.float32)
              for name, shape in _tf1_names_and_shapes().items()}
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.compat.v1.Variable(value, name=name) for name, value in values.items()]
        # Training checkpoints also hold the step and the LAMB/AdamW slots; loaders skip them.
        variables.append(tf.compat.v1.Variable(np.int64(1000), name="global_step"))
        variables.append(tf.compat.v1.Variable(np.zeros([2, 16], np.float32),
                                               name="cls/seq_relationship/output_weights/adam_m"))
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    return prefix, values


def _restored(prefix, config):
    model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(config))
    restore_checkpoint(model, prefix)
    return model


def test_init_from_google_checkpoint(data, tmp_path, google_checkpoint):
    pytest.importorskip("albert_tf.checkpoints")
    prefix, values = google_checkpoint
    out = tmp_path / "init"
    # Learning rate 0: the one training step leaves the initial weights as they were read.
    _run(data, out, init_checkpoint=prefix, learning_rate=0.0, num_train_steps=1, save_checkpoints_steps=1)
    model = _restored(str(out / "model.ckpt-1"), CONFIG)
    block = model.encoder.groups[0][0]
    pairs = {
        "bert/embeddings/word_embeddings": model.encoder.embeddings.word_embeddings,
        "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel": block.attention.query.kernel,
        "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/bias": block.ffn_output.bias,
        "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma": block.output_layer_norm.gamma,
        "cls/predictions/output_bias": model.mlm_head.output_bias,
        "cls/seq_relationship/output_weights": model.sop_head.output_weights,
    }
    for name, variable in pairs.items():
        np.testing.assert_allclose(variable.numpy(), values[name], rtol=1e-6, err_msg=name)


def test_init_from_group0(data, tmp_path, google_checkpoint):
    pytest.importorskip("albert_tf.checkpoints")
    prefix, values = google_checkpoint
    config = dict(CONFIG, num_hidden_groups=2)
    (tmp_path / "g2.json").write_text(json.dumps(config))
    out = tmp_path / "group0"
    _run(data, out, albert_config_file=str(tmp_path / "g2.json"), init_checkpoint=prefix, init_from_group0=True,
         learning_rate=0.0, num_train_steps=1, save_checkpoints_steps=1)
    model = _restored(str(out / "model.ckpt-1"), config)
    source = values["bert/encoder/transformer/group_0/inner_group_0/attention_1/self/key/kernel"]
    for group in model.encoder.groups:
        np.testing.assert_allclose(group[0].attention.key.kernel.numpy(), source, rtol=1e-6)
    np.testing.assert_allclose(model.encoder.pooler.kernel.numpy(), values["bert/pooler/dense/kernel"], rtol=1e-6)


@pytest.mark.e2e
def test_cli_flags_and_run(data, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    script = ("import json; from absl import flags; from albert_tf import commands; "
              "from albert_tf.commands import flags as flag_lib; c = commands.find('run_pretraining'); "
              "flag_lib.define_flags(c.options, no_flag=c.no_flag, only=c.only, module_name='run_pretraining'); "
              "print(json.dumps({n: flags.FLAGS[n].default for n in flags.FLAGS "
              "if flags.FLAGS.find_module_defining_flag(n) == 'run_pretraining'}))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    defaults = json.loads(out.stdout.strip().splitlines()[-1])
    expected = dict(albert_config_file=None, input_file=None, output_dir=None, init_checkpoint=None,
                    max_seq_length=512, max_predictions_per_seq=20, do_train=True, do_eval=False,
                    train_batch_size=4096, eval_batch_size=64, optimizer="lamb", learning_rate=0.00176,
                    poly_power=1.0, num_train_steps=125000, num_warmup_steps=3125, start_warmup_step=0,
                    save_checkpoints_steps=5000, keep_checkpoint_max=5, iterations_per_loop=1000,
                    max_eval_steps=100, use_tpu=False, init_from_group0=False, tpu_name=None, tpu_zone=None,
                    gcp_project=None, master=None, num_tpu_cores=8, masked_lm_budget=0,
                    strategy="one_device", mixed_precision="float32", jit_compile=False,
                    gradient_accumulation_steps=1)
    assert {k: defaults.get(k, "MISSING") for k in expected} == expected
    run = subprocess.run(
        [sys.executable, "run_pretraining.py", f"--albert_config_file={data / 'albert_config.json'}",
         f"--input_file={data}/part-0.tfrecord,{data}/part-1.tfrecord", f"--output_dir={tmp_path / 'cli'}",
         f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PRED}", "--train_batch_size=4",
         "--num_train_steps=2", "--num_warmup_steps=1", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
         "--do_eval", "--eval_batch_size=4", "--max_eval_steps=2", "--optimizer=adamw",
         "--gradient_accumulation_steps=2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "examples/s" in run.stderr and "ETA" in run.stderr
    assert (tmp_path / "cli" / "model.ckpt-2.index").exists()
    assert "masked_lm_accuracy" in (tmp_path / "cli" / "eval_results.txt").read_text()


def test_do_eval_reads_the_original_checkpoints_in_output_dir(data, tmp_path):
    """`--do_eval` over an output dir of the original `run_pretraining.py` (TF1 names, LAMB slots, global_step)
    writes the same results as over our checkpoints of the same weights; damaged or foreign checkpoints stop it
    before anything is written."""
    tf.keras.utils.set_random_seed(3)
    model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(CONFIG))
    ours, original = tmp_path / "ours", tmp_path / "original"
    oc.save_our_checkpoint(model, str(ours / "model.ckpt-5"))
    oc.save_original_checkpoint(model, str(original / "model.ckpt-5"), slots=("lamb_m", "lamb_v"), global_step=5)
    results = [_run(data, out, do_train=False, do_eval=True)["eval"] for out in (ours, original)]
    assert results[0] == results[1] and results[0]["global_step"] == 5
    expected = oc.files_with_text(str(ours))
    assert set(expected) == {"best_trial.txt", "eval_results.txt"}
    assert oc.files_with_text(str(original)) == expected

    damaged = tmp_path / "damaged"
    prefix = oc.save_original_checkpoint(model, str(damaged / "model.ckpt-5"), slots=("lamb_m", "lamb_v"))
    oc.truncate_data(prefix)
    before = sorted(os.listdir(damaged))
    with pytest.raises(ValueError, match="is damaged") as error:
        _run(data, damaged, do_train=False, do_eval=True)
    assert prefix in str(error.value)
    assert sorted(os.listdir(damaged)) == before

    foreign = tmp_path / "foreign"
    prefix = oc.save_original_checkpoint(
        albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(dict(CONFIG, hidden_size=32))),
        str(foreign / "model.ckpt-5"))
    with pytest.raises(ValueError) as error:
        _run(data, foreign, do_train=False, do_eval=True)
    oc.assert_short_error(str(error.value), prefix)
    assert "shape mismatch" in str(error.value)


@pytest.mark.parametrize("recompute", [False, True])
def test_recompute_reaches_the_model_only_when_set(data, tmp_path, monkeypatch, recompute):
    seen = recording(monkeypatch, pretraining, "AlbertPretrainer")
    with pytest.raises(Built):
        _run(data, tmp_path / "out", recompute=recompute)
    assert ("recompute" in seen[0]) == recompute and seen[0].get("recompute", True) is True


def test_recompute_gives_the_same_run(data, tmp_path):
    """A few seeded pretraining steps (with dropout) give the same checkpoints and eval losses with and without
    `recompute`: recomputation changes the memory, not the numbers."""
    config = dict(CONFIG, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, num_hidden_layers=3)
    (tmp_path / "albert_config.json").write_text(json.dumps(config))
    runs = {}
    for recompute in (False, True):
        out = tmp_path / f"recompute_{recompute}"
        result = _run(data, out, albert_config_file=str(tmp_path / "albert_config.json"), do_eval=True,
                      recompute=recompute)
        assert result["train"]["global_step"] == 6
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(config))
        restore_checkpoint(model, str(out / "model.ckpt-6"))
        runs[recompute] = (result["eval"], {name: value.numpy() for name, value in tf1_tensors(model)})
    (eval_a, weights_a), (eval_b, weights_b) = runs[False], runs[True]
    assert weights_a.keys() == weights_b.keys() and len(weights_a) > 10
    for name in weights_a:
        np.testing.assert_allclose(weights_b[name], weights_a[name], rtol=1e-5, atol=1e-6, err_msg=name)
    for key in ("masked_lm_loss", "sentence_order_loss"):
        assert eval_b[key] == pytest.approx(eval_a[key], rel=1e-5)


def test_sentence_loss_weight_leaves_out_the_sentence_loss(data, tmp_path):
    """`sentence_loss_weight=0.0` trains on the MLM loss alone (the paper's no-sentence-loss ablation); the
    default trains on the original total, MLM + SOP."""
    runs = {weight: _run(data, tmp_path / f"w{weight}", do_eval=True, sentence_loss_weight=weight)
            for weight in (1.0, 0.0)}
    default, mlm_only = runs[1.0], runs[0.0]
    assert default["train"]["loss"] == pytest.approx(
        default["train"]["masked_lm_loss"] + default["train"]["sentence_order_loss"], rel=1e-5)
    assert mlm_only["train"]["loss"] == pytest.approx(mlm_only["train"]["masked_lm_loss"], rel=1e-6)
    assert mlm_only["train"]["sentence_order_loss"] > 0
    assert mlm_only["eval"]["loss"] < default["eval"]["loss"]
