"""Tiny fine-tuning runs that share one encoder, each with its own single-task export, for the multi-task export
tests: a LoRA SST-2 classifier, a frozen-encoder CoLA classifier and a LoRA NER tagger, all from one initial
checkpoint through the runners (`run_classifier`, `run_ner`), and runs made unfit on purpose (a full fine-tune,
another encoder, no head) from copies of them."""

import json
import os
import shutil

import numpy as np
import tensorflow as tf

import task_fixtures
from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.glue.task import run_classifier
from albert_tf.tasks.ner.task import run_ner
from albert_tf.training import loop, run_record

SEQ = task_fixtures.SEQ
# The pooler's adapter moves the tiny encoder's outputs visibly (as in tests/training/test_lora_runners.py).
LORA_TARGETS = ["query", "value", "pooler"]


def run_args(paths, **kwargs):
    args = dict(albert_config_file=paths["config_file"], spm_model_file=paths["spm"], init_checkpoint=paths["init"],
                max_seq_length=SEQ, train_batch_size=4, eval_batch_size=4, predict_batch_size=4,
                learning_rate=1e-2, warmup_step=1, random_seed=1, do_train=True, train_step=4,
                save_checkpoints_steps=4)
    args.update(kwargs)
    return args


def write_runs(root):
    """The data, an initial encoder checkpoint and three runs with their single-task exports under `root`;
    returns `paths` with `runs` `{task name: run dir}` and `exports` `{task name: version dir}`."""
    root = str(root)
    paths = task_fixtures.write_all(root)
    tf.keras.utils.set_random_seed(7)
    encoder = AlbertModel(paths["config"])
    ids = np.ones([1, SEQ], np.int32)
    encoder({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}, training=False)
    paths["init"] = save_tf1_checkpoint(encoder, os.path.join(root, "init", "model.ckpt"))
    runs, exports = {}, {}

    def out(name):
        runs[name] = os.path.join(root, "runs", name)
        return runs[name], os.path.join(root, "exports", name)

    run_dir, export_dir = out("sentiment")
    exports["sentiment"] = run_classifier("SST-2", paths["glue"], run_dir, export_dir=export_dir, **run_args(
        paths, lora_rank=2, lora_targets=LORA_TARGETS))["export_path"]
    run_dir, export_dir = out("grammar")
    exports["grammar"] = run_classifier("CoLA", paths["glue"], run_dir, export_dir=export_dir, **run_args(
        paths, freeze_encoder=True))["export_path"]
    run_dir, export_dir = out("tags")
    exports["tags"] = run_ner(paths["conll"], run_dir, export_dir=export_dir, **run_args(
        paths, lora_rank=2))["export_path"]
    paths["runs"], paths["exports"] = runs, exports
    return paths


def copy_run(run_dir, target, **record):
    """A copy of the run in `run_dir` at `target`, its `albert_run.json` updated with `record`."""
    shutil.copytree(run_dir, target)
    saved = run_record.read(target)
    saved.update(record)
    with open(run_record.path(target), "w") as f:
        json.dump(saved, f)
    return str(target)


def frozen_classifier(run_dir):
    saved = run_record.read(run_dir)
    model = AlbertClassifier.from_config(saved["model_config"])
    restore_checkpoint(model, loop.list_checkpoints(run_dir)[-1][1])
    return model


def _replace_checkpoints(run_dir, objects):
    for name in os.listdir(run_dir):
        if name.startswith("model.ckpt") or name == "checkpoint":
            os.remove(os.path.join(run_dir, name))
    tf.train.Checkpoint(**objects).write(os.path.join(run_dir, loop.BEST_CHECKPOINT_NAME))


def other_encoder_run(run_dir, target):
    """A copy of the frozen-encoder run `run_dir` whose encoder's word embeddings moved by 1e-3."""
    target = copy_run(run_dir, target)
    model = frozen_classifier(target)
    embeddings = model.encoder.embeddings.word_embeddings
    embeddings.assign(embeddings.numpy() + 1e-3)
    _replace_checkpoints(target, loop.checkpoint_objects(model))
    return target


def headless_run(run_dir, target):
    """A copy of the frozen-encoder run `run_dir` whose checkpoint holds the encoder only (no head)."""
    target = copy_run(run_dir, target)
    model = frozen_classifier(target)
    _replace_checkpoints(target, loop.checkpoint_objects(model.encoder))
    return target
