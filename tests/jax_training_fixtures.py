"""Tiny models and optimizers built the same way under every Keras backend, for the JAX training tests: the
TensorFlow side runs in a fresh process (`fresh_process.run_measurement` with `KERAS_BACKEND=tensorflow`)."""

import os

import keras
import numpy as np

CONFIG = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, hidden_act="gelu", initializer_range=0.02, type_vocab_size=2,
              num_hidden_groups=1, inner_group_num=1, down_scale_factor=1)
KINDS = ("pretrainer_lamb", "classifier_lora_adamw")


def build(kind):
    """`(model, optimizer)` of `kind`, the optimizer built on the model's trainable variables."""
    import albert_tf
    from albert_tf.training import optimization

    config = albert_tf.AlbertConfig.from_dict(CONFIG)
    if kind == "pretrainer_lamb":
        model = albert_tf.AlbertPretrainer(config)
        optimizer = optimization.create_optimizer(1e-3, 10, 2, optimizer="lamb")
    else:
        model = albert_tf.AlbertClassifier(config, num_labels=3)
        model.enable_lora(2, target_names=("query", "value", "ffn"))
        optimizer = optimization.create_optimizer(1e-3, 10, 2, optimizer="adamw")
    optimizer.build(model.trainable_variables)
    return model, optimizer


def fill(model, optimizer, offset):
    """Gives every variable a value of its own: `offset + 0.001 * position` (ints: `offset + position`)."""
    for i, variable in enumerate(list(model.variables) + list(optimizer.variables)):
        dtype = keras.backend.standardize_dtype(variable.dtype)
        if "int" in dtype:
            value = np.full(variable.shape, int(offset) + i, dtype)
        else:
            value = np.full(variable.shape, offset + 0.001 * i, dtype)
        variable.assign(value)


def tf_write(kind, prefix, offset):
    """Under the TensorFlow backend: `kind` filled with `offset`, written the TensorFlow runners' way."""
    import tensorflow as tf
    from albert_tf.training import loop

    model, optimizer = build(kind)
    fill(model, optimizer, offset)
    return tf.train.Checkpoint(**loop.checkpoint_objects(model), optimizer=optimizer).write(prefix)


def tf_restore(kind, prefix):
    """Under the TensorFlow backend: restores `prefix` the TensorFlow runners' way; returns `{key: value}` read back
    from the restored objects (a checkpoint of them written next to `prefix`)."""
    import tensorflow as tf
    from albert_tf.training import loop

    model, optimizer = build(kind)
    checkpoint = tf.train.Checkpoint(**loop.checkpoint_objects(model), optimizer=optimizer)
    checkpoint.restore(prefix).expect_partial()
    return checkpoint.write(prefix + "-tf")


SEQ, PRED = 16, 4


def _example(rng, index):
    """One record of the original pretraining schema; `input_ids[1]` carries the record index."""
    import tensorflow as tf
    from albert_tf.data import features as features_lib

    vocab = CONFIG["vocab_size"]
    length = rng.randint(SEQ // 2, SEQ + 1)
    ids = [2] + list(rng.randint(5, vocab, size=length - 2)) + [3]
    ids[1] = 5 + index % (vocab - 5)
    num_masked = rng.randint(1, PRED + 1)
    positions = sorted(rng.choice(np.arange(2, length - 1), size=num_masked, replace=False))
    pad = SEQ - length
    feature = {
        "input_ids": features_lib.int64_feature(ids + [0] * pad),
        "input_mask": features_lib.int64_feature([1] * length + [0] * pad),
        "segment_ids": features_lib.int64_feature([0] * (length // 2) + [1] * (length - length // 2) + [0] * pad),
        "token_boundary": features_lib.int64_feature([1] * SEQ),
        "masked_lm_positions": features_lib.int64_feature(list(positions) + [0] * (PRED - num_masked)),
        "masked_lm_ids": features_lib.int64_feature([ids[p] for p in positions] + [0] * (PRED - num_masked)),
        "masked_lm_weights": features_lib.float_feature([1.0] * num_masked + [0.0] * (PRED - num_masked)),
        "next_sentence_labels": features_lib.int64_feature([int(rng.randint(0, 2))]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_pretraining_data(root):
    """Two TFRecord files of 24 records and the config (dropout off) in `root`; returns the config's path."""
    import json
    import tensorflow as tf

    rng = np.random.RandomState(0)
    for shard in range(2):
        with tf.io.TFRecordWriter(os.path.join(root, f"part-{shard}.tfrecord")) as writer:
            for i in range(24):
                writer.write(_example(rng, shard * 24 + i))
    path = os.path.join(root, "albert_config.json")
    with open(path, "w") as f:
        json.dump(dict(CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0), f)
    return path


def run_pretraining(root, output_dir, init_checkpoint=None, num_train_steps=6, **kwargs):
    """`run_pretraining` on `write_pretraining_data(root)`'s records: LAMB, batch 8, seed 1, a checkpoint every 3
    steps; returns its result."""
    from albert_tf.tasks.pretraining.task import run_pretraining as run

    args = dict(albert_config_file=os.path.join(root, "albert_config.json"),
                input_file=os.path.join(root, "part-*.tfrecord"), output_dir=output_dir, max_seq_length=SEQ,
                max_predictions_per_seq=PRED, train_batch_size=8, learning_rate=5e-3, num_train_steps=num_train_steps,
                num_warmup_steps=2, save_checkpoints_steps=3, iterations_per_loop=3, seed=1, optimizer="lamb",
                init_checkpoint=init_checkpoint)
    args.update(kwargs)
    result = run(**args)
    return {"global_step": int(result["train"]["global_step"]), "loss": float(result["train"].get("loss", 0.0)),
            "compilations": int(result["train"].get("compilations", 0))}


def _pretrainer():
    import albert_tf

    return albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(
        dict(CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)))


def tf_release_and_run(root, release, output_dir, dense_gradient_norm=None):
    """Under the TensorFlow backend: a tiny release in the original's layout (TF1 names, LAMB slots,
    `global_step`) at `release`, then `run_pretraining` from it on one device in `output_dir`; with
    `dense_gradient_norm`, its optimizer clips by that norm (True: the original's on TPU, as JAX)."""
    import keras
    import original_checkpoints
    from albert_tf.training import optimization

    if dense_gradient_norm is not None:
        create = optimization.create_optimizer

        def create_with_norm(*args, **kwargs):     # the driver's optimizer, with the norm asked for
            optimizer = create(*args, **kwargs)
            getattr(optimizer, "inner_optimizer", optimizer).dense_gradient_norm = dense_gradient_norm
            return optimizer

        optimization.create_optimizer = create_with_norm
    keras.utils.set_random_seed(5)
    original_checkpoints.save_original_checkpoint(_pretrainer(), release, slots=("lamb_m", "lamb_v"))
    return run_pretraining(root, output_dir, init_checkpoint=release)


def tf_read(prefix):
    """Under the TensorFlow backend: the model's variables as the TensorFlow tools read checkpoint `prefix`
    (`restore_checkpoint`), `{variable path: value as a list}`."""
    from albert_tf.checkpoints.restore import restore_checkpoint

    model = _pretrainer()
    restore_checkpoint(model, prefix)
    return {v.path: np.asarray(v.numpy()).tolist() for v in model.weights}


def jax_run_and_resume(root, release, output_dir, resumed_dir):
    """Under JAX: `run_pretraining` from `release` in `output_dir`; then a copy of it whose newest checkpoint
    (step 6) is cut short resumes in `resumed_dir` from step 3 (the cut one moved aside) to step 6."""
    import shutil
    import original_checkpoints

    first = run_pretraining(root, output_dir, init_checkpoint=release)
    shutil.copytree(output_dir, resumed_dir)
    original_checkpoints.truncate_data(os.path.join(resumed_dir, "model.ckpt-6"))
    second = run_pretraining(root, resumed_dir, init_checkpoint=release)
    return [first, second]


def model_values(prefix):
    """`{variable path: value as a list}` of a pretrainer restored from `prefix` under this process's backend."""
    from albert_tf.checkpoints import object_graph

    model = _pretrainer()
    object_graph.restore(prefix, object_graph.checkpoint_root(model), expect_partial=False)
    return {v.path: object_graph.host_value(v).tolist() for v in model.weights}


def jax_processes(root, release, output_dir, count=2, devices=4, timeout=400):
    """`run_pretraining` from `release` in `output_dir` by `count` JAX processes of `devices` CPU devices each on
    loopback (`keras.distribution.initialize()` through the KERAS_DISTRIBUTION_* variables); returns their
    results."""
    import json
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import jax_training_fixtures as f; "
            "print('RESULT ' + json.dumps(f.run_pretraining(sys.argv[2], sys.argv[4], init_checkpoint=sys.argv[3])))")
    procs = []
    for index in range(count):
        env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2",
                   XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
                   KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}", KERAS_DISTRIBUTION_NUM_PROCESSES=str(count),
                   KERAS_DISTRIBUTION_PROCESS_ID=str(index))
        procs.append(subprocess.Popen([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), root,
                                       release, output_dir], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err[-4000:]
        results.append(json.loads([line for line in out.splitlines() if line.startswith("RESULT ")][-1][7:]))
    return results


def jax_classifier(glue_root, spm_model_file, config_file, output_dir):
    """Under JAX on 8 devices: `run_classifier` trains SST-2 four steps (training only) twice: data parallel with
    gradient accumulation 2, then LoRA on a `(batch 4, model 2)` mesh. Returns both results, the number of
    LoRA adapters in the second run's checkpoint, whether its frozen kernels stayed as initialised, and the
    sharding of a query kernel and an FFN output kernel under the model-parallel distribution."""
    import albert_tf
    from albert_tf.checkpoints import object_graph
    from albert_tf import options as options_lib
    from albert_tf.tasks.glue.task import ClassifierOptions, GlueTask
    from albert_tf.training import driver, jax_distribution

    def run_classifier(*args, **kwargs):   # the driver's stages: `run_classifier` returns no training result
        return driver.run(GlueTask, *options_lib.call_options(ClassifierOptions, args, kwargs, None, None))

    common = dict(albert_config_file=config_file, spm_model_file=spm_model_file, max_seq_length=32,
                  train_batch_size=16, learning_rate=1e-2, warmup_step=1, train_step=4, save_checkpoints_steps=2,
                  do_train=True, random_seed=3)
    first = run_classifier("sst-2", glue_root, os.path.join(output_dir, "dp"), gradient_accumulation_steps=2,
                           **common)["train"]
    second = run_classifier("sst-2", glue_root, os.path.join(output_dir, "lora_mp"), lora_rank=2,
                            model_parallel_devices=2, **common)["train"]
    devices = jax_distribution.jax_devices(2)
    with devices.scope():
        config = albert_tf.AlbertConfig.from_json_file(config_file)
        model = albert_tf.AlbertClassifier(config, num_labels=2)
    block = model.encoder.group_0_inner_group_0
    specs = [list(v.value.sharding.spec) for v in (block.attention.query.kernel, block.ffn_output.kernel)]
    keys = [k for k, _ in __import__("tensorflow").train.list_variables(
        os.path.join(output_dir, "lora_mp", "model.ckpt-4"))]
    step2 = albert_tf.AlbertClassifier(config, num_labels=2)
    step2.enable_lora(2)
    step4 = albert_tf.AlbertClassifier(config, num_labels=2)
    step4.enable_lora(2)
    object_graph.restore(os.path.join(output_dir, "lora_mp", "model.ckpt-2"), object_graph.checkpoint_root(step2))
    object_graph.restore(os.path.join(output_dir, "lora_mp", "model.ckpt-4"), object_graph.checkpoint_root(step4))
    frozen_kept = all(np.array_equal(object_graph.host_value(a), object_graph.host_value(b))
                      for a, b in zip(step2.non_trainable_weights, step4.non_trainable_weights))
    adapters_moved = any(not np.array_equal(object_graph.host_value(a), object_graph.host_value(b))
                         for a, b in zip(step2.trainable_weights, step4.trainable_weights) if "lora" in a.path)
    return {"first": {k: float(v) for k, v in first.items() if np.isscalar(v)},
            "second": {k: float(v) for k, v in second.items() if np.isscalar(v)},
            "specs": specs, "lora_alpha_saved": "lora/alpha/.ATTRIBUTES/VARIABLE_VALUE" in keys,
            "frozen_kept": frozen_kept, "adapters_moved": adapters_moved}


def jax_task_runners(root, output_dir):
    """Under JAX on 8 devices: `run_squad` (SQuAD 1.1 and 2.0), `run_race` and `run_ner` on the tiny fixtures of
    `task_fixtures`, each training two steps at batch 8 and then evaluating (SQuAD: predicting on a dev file with
    answers). Returns `{runner: {"global_step", "compilations", "scores"}}`, `scores` the names of the metrics."""
    import task_fixtures
    from albert_tf import options as options_lib
    from albert_tf.tasks.ner.task import NerOptions, NerTask
    from albert_tf.tasks.race.task import RaceOptions, RaceTask
    from albert_tf.tasks.squad.task import SquadOptions, SquadTask
    from albert_tf.training import driver

    paths = task_fixtures.write_all(root)
    common = dict(albert_config_file=paths["config_file"], spm_model_file=paths["spm"], train_batch_size=8,
                  predict_batch_size=8, learning_rate=1e-3, save_checkpoints_steps=2, random_seed=3, do_train=True)
    steps = dict(train_step=2, warmup_step=1, eval_batch_size=8)
    squad = dict(max_seq_length=task_fixtures.SQUAD_SEQ, doc_stride=8, max_query_length=8, n_best_size=3,
                 do_predict=True)
    runs = {
        # Training steps from epochs: int(10 examples / 8 * 1.6) = 2 (v1), int(15 / 8 * 1.1) = 2 (v2).
        "squad_v1": (SquadTask, SquadOptions, dict(squad, train_file=paths["squad1.1_train"],
                                                   predict_file=paths["squad1.1_dev"], num_train_epochs=1.6)),
        "squad_v2": (SquadTask, SquadOptions, dict(squad, train_file=paths["squad2.0_train"],
                                                   predict_file=paths["squad2.0_dev"], num_train_epochs=1.1,
                                                   version_2_with_negative=True, start_n_top=2, end_n_top=2)),
        "race": (RaceTask, RaceOptions, dict(steps, data_dir=paths["race"], max_seq_length=task_fixtures.SEQ,
                                             max_qa_length=6, do_eval=True)),
        "ner": (NerTask, NerOptions, dict(steps, data_dir=paths["conll"], max_seq_length=task_fixtures.SEQ,
                                          do_eval=True)),
    }
    results = {}
    for name, (task_class, options_class, kwargs) in runs.items():
        kwargs = dict(common, output_dir=os.path.join(output_dir, name), **kwargs)
        result = driver.run(task_class, *options_lib.call_options(options_class, (), kwargs, None, None))
        scores = result.get("eval") or result.get("predict") or {}
        results[name] = {"global_step": int(result["train"]["global_step"]),
                         "compilations": int(result["train"]["compilations"]),
                         "scores": sorted(scores) if isinstance(scores, dict) else []}
    return results
