"""Every task's steps under XLA on the CPU, as a TPU (and `--jit_compile` on a GPU) compiles them.

For pretraining, GLUE classification and regression, SQuAD v1 and v2, RACE and NER: the training input has
fully static shapes (`drop_remainder`), the training step (loss and gradients, as `loop.run_training` computes
them) compiles with `jit_compile=True` and gives the numbers of the same step without XLA, and the task's own
eval/predict stage run with `jit_compile` (its step compiled with XLA, its batches padded to one static shape)
gives the metrics of the run without XLA. Tolerances are float32 rounding. Without a TPU, `--strategy=tpu`
and `--use_tpu` stop with one line that names the missing TPU.

The per-task tests compile several XLA programs each (15-45 s on a shared CPU): they are in the e2e tier; the
optimizer and TPU checks are fast.
"""

import contextlib
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks.ner import data as conll
from albert_tf.errors import InputError
from albert_tf.options import RuntimeOptions
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.training import distribution, driver, inference, loop, optimization
from albert_tf.tasks.glue.task import ClassifierOptions, GlueTask, run_classifier
from albert_tf.tasks.ner.task import NerOptions, NerTask
from albert_tf.tasks.pretraining.task import PretrainingOptions, PretrainingTask
from albert_tf.tasks.race.task import RaceOptions, RaceTask
from albert_tf.tasks.squad.task import SquadOptions, SquadTask, predict_raw_results, predict_dataset
import task_fixtures as tfx

STRATEGY = tf.distribute.get_strategy()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tfx.write_all(tmp_path_factory.mktemp("xla"))


def make_task(task_class, options, jit_compile=False, random_seed=None):
    """`task_class` built as `driver.run` builds it: its options and a `Runtime` with `jit_compile` (and
    `random_seed`), its strategy the default one."""
    runtime = driver.Runtime(RuntimeOptions(jit_compile=jit_compile, random_seed=random_seed), options,
                             contextlib.ExitStack())
    runtime.strategy = STRATEGY
    return task_class(options, runtime)


def assert_close(actual, expected, what):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64), rtol=2e-4,
                               atol=2e-6, err_msg=what)


def assert_same_choices(actual, expected, field):
    """The top-k indices `field` (e.g. `end_top_index`) of two runs are the same, but where two candidates score
    the same within `assert_close`'s tolerance XLA may rank them the other way: an index may differ only where
    its score (`end_top_log_probs`) is the reference's."""
    scores = field.replace("_index", "_log_probs")
    differ = np.asarray(actual[field]) != np.asarray(expected[field])
    assert_close(np.asarray(actual[scores])[differ], np.asarray(expected[scores])[differ], f"{field} (a tie)")


def assert_static(dataset):
    for spec in tf.nest.flatten(dataset.element_spec):
        assert spec.shape.is_fully_defined(), dataset.element_spec


def gradient_step(model, loss_fn, jit_compile):
    """`loop.run_training`'s replica computation: the task's loss in training mode and its gradients."""
    variables = model.trainable_variables

    @tf.function(jit_compile=jit_compile)
    def step(features):
        with tf.GradientTape() as tape:
            loss, metrics = loss_fn(model, features, True)
        return loss, metrics, tape.gradient(loss, variables)

    return step


def check_training_step(task, model, batch_size=2):
    """The task's training input is static; its step under XLA gives the loss, scalars and gradients of the
    step without XLA."""
    dataset = task.train_data().dataset(tf.distribute.InputContext(), batch_size)
    assert_static(dataset)
    features = next(iter(dataset))
    model(features, training=False)
    loss, metrics, grads = gradient_step(model, task.loss, False)(features)
    xla_loss, xla_metrics, xla_grads = gradient_step(model, task.loss, True)(features)
    assert float(loss) > 0
    assert_close(xla_loss, loss, "loss")
    assert sorted(xla_metrics) == sorted(metrics)
    for name in metrics:
        assert_close(xla_metrics[name], metrics[name], name)
    compared = 0
    for variable, grad, xla_grad in zip(model.trainable_variables, grads, xla_grads):
        assert (grad is None) == (xla_grad is None), variable.path
        if grad is not None:
            assert_close(tf.convert_to_tensor(xla_grad), tf.convert_to_tensor(grad), variable.path)
            compared += 1
    assert compared >= len(model.trainable_variables) // 2


# Correlations of an untrained regressor's predictions, whose spread is tiny, move by up to ~1e-3 with float32
# rounding (the predictions themselves are compared to 2e-4 below, and MSE and the loss here).
CORRELATIONS = ("pearson", "spearman")


def assert_same_metrics(xla, reference):
    assert sorted(xla) == sorted(reference)
    for key, value in reference.items():
        if key in CORRELATIONS:
            np.testing.assert_allclose(xla[key], value, rtol=0, atol=1e-2, err_msg=key)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            assert_close(xla[key], value, key)
        else:
            assert xla[key] == value, key


# --- one test per task ---------------------------------------------------------------------------------------


def _glue_task(data, directory, task_name, jit_compile):
    options = ClassifierOptions(task_name=task_name, data_dir=data["glue"], output_dir=str(directory),
                                albert_config_file=data["config_file"], spm_model_file=data["spm"],
                                max_seq_length=tfx.SEQ, eval_batch_size=4, predict_batch_size=4)
    os.makedirs(options.output_dir, exist_ok=True)
    return make_task(GlueTask, options, jit_compile)


@pytest.mark.e2e
@pytest.mark.parametrize("task_name", ["mrpc", "sts-b"])
def test_glue_classification_and_regression(data, tmp_path, task_name):
    reference, xla = (_glue_task(data, tmp_path / str(jit), task_name, jit) for jit in (False, True))
    model = AlbertClassifier(data["config"], num_labels=len(xla.label_list), dropout_rate=0.0)
    check_training_step(xla, model)
    assert_same_metrics(xla.evaluate(model), reference.evaluate(model))
    assert_static(xla._eval[1])
    # Predictions: the padded test batches give one row per real example, the unpadded run's values.
    for task in (reference, xla):
        task.predict(model, None)
    rows = [np.loadtxt(os.path.join(task.options.output_dir, "test_results.tsv"), ndmin=2)
            for task in (reference, xla)]
    assert rows[0].shape[0] == len(xla.processor.get_test_examples(data["glue"]))
    assert_close(rows[1], rows[0], "test_results.tsv")


@pytest.mark.e2e
@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_squad(data, tmp_path, v2):
    version = "2.0" if v2 else "1.1"
    options = SquadOptions(
        output_dir=str(tmp_path), albert_config_file=data["config_file"], spm_model_file=data["spm"],
        train_file=data[f"squad{version}_train"],
        predict_file=data[f"squad{version}_dev"], max_seq_length=tfx.SQUAD_SEQ, doc_stride=8, max_query_length=8,
        train_batch_size=2, predict_batch_size=4, version_2_with_negative=v2, start_n_top=2, end_n_top=2, n_best_size=3,
        dropout_prob=0.0)
    task = make_task(SquadTask, options)
    model = (AlbertSquadV2(data["config"], start_n_top=2, end_n_top=2, dropout_prob=0.0) if v2
             else AlbertSquadV1(data["config"]))
    check_training_step(task, model)
    count = len(task._eval_data()[2])
    results = {}
    for jit in (False, True):
        dataset = predict_dataset(options.feature_path("predict_feature_file"), tfx.SQUAD_SEQ, 4, v2, count,
                                  pad_to_full_batches=jit)
        if jit:
            assert_static(dataset)
        results[jit] = {r.unique_id: r for r in predict_raw_results(model, dataset, STRATEGY, v2, count,
                                                                     jit_compile=jit)}
    assert sorted(results[True]) == sorted(results[False]) and len(results[False]) == count
    for unique_id, reference in results[False].items():
        compiled = results[True][unique_id]._asdict()
        for field, value in reference._asdict().items():
            if "index" in field:
                assert_same_choices(compiled, reference._asdict(), field)
            else:
                assert_close(compiled[field], value, field)
    # The task's own stage under XLA: padded batches, scored with the official metrics.
    metrics = make_task(SquadTask, options, jit_compile=True).evaluate(model)
    assert "f1" in metrics and os.path.exists(os.path.join(tmp_path, "predictions.json"))


@pytest.mark.e2e
def test_race(data, tmp_path):
    tasks = []
    for jit in (False, True):
        options = RaceOptions(data_dir=data["race"], output_dir=str(tmp_path / str(jit)),
                              albert_config_file=data["config_file"], spm_model_file=data["spm"],
                              max_seq_length=tfx.SEQ, max_qa_length=6, eval_batch_size=4,
                              predict_batch_size=4, dropout_prob=0.0)
        os.makedirs(options.output_dir)
        tasks.append(make_task(RaceTask, options, jit))
    reference, xla = tasks
    model = AlbertRace(data["config"], dropout_prob=0.0)
    check_training_step(xla, model)
    assert_same_metrics(xla.evaluate(model), reference.evaluate(model))
    assert_same_metrics(xla.predict(model, None), reference.predict(model, None))


@pytest.mark.e2e
def test_ner(data, tmp_path):
    labels = conll.labels_from_sentences(conll.read_sentences(conll.split_path(data["conll"], "train")))
    tasks = []
    for jit in (False, True):
        os.makedirs(tmp_path / str(jit))
        options = NerOptions(data_dir=data["conll"], output_dir=str(tmp_path / str(jit)),
                             albert_config_file=data["config_file"], spm_model_file=data["spm"],
                             labels=",".join(labels), max_seq_length=tfx.SEQ, eval_batch_size=4,
                             predict_batch_size=4, dropout_prob=0.0)
        tasks.append(make_task(NerTask, options, jit))
    reference, xla = tasks
    assert xla.labels == labels
    model = AlbertTokenClassifier(data["config"], num_labels=len(labels), labels=labels, dropout_rate=0.0)
    check_training_step(xla, model)
    assert len(xla._read("dev")[1]) % 4, "the dev windows should leave a partial batch to pad"
    assert_same_metrics(xla.evaluate(model), reference.evaluate(model))


@pytest.mark.e2e
def pretraining_options(data, output_dir, **fields):
    return PretrainingOptions(albert_config_file=data["config_file"], input_file=data["pretraining"],
                              output_dir=str(output_dir), max_seq_length=tfx.SEQ, max_predictions_per_seq=tfx.PRED,
                              **fields)


@pytest.mark.e2e
def test_pretraining(data, tmp_path):
    options = pretraining_options(data, tmp_path, eval_batch_size=4, max_eval_steps=2)
    reference, xla = (make_task(PretrainingTask, options, jit) for jit in (False, True))
    model = AlbertPretrainer(data["config"])
    check_training_step(xla, model)
    assert_same_metrics(xla.evaluate(model), reference.evaluate(model))
    assert_static(xla._eval_dataset)


# --- the loop and the optimizers under XLA -----------------------------------------------------------------


@pytest.mark.e2e
def test_run_training_with_xla_and_accumulation_takes_the_steps_without_xla(data, tmp_path):
    """`loop.run_training(jit_compile=True)` with gradient accumulation (a `tf.while_loop` inside the XLA
    function) moves the weights as the loop without XLA (plain SGD, so the update is linear in the gradient)."""
    task = make_task(PretrainingTask, pretraining_options(data, tmp_path / "task"), random_seed=5)
    train_dataset = task.train_data().dataset
    weights = None
    finals = []
    for jit in (False, True):
        model = AlbertPretrainer(data["config"])
        model(next(iter(train_dataset(tf.distribute.InputContext(), 2))), training=False)
        if weights is None:
            weights = model.get_weights()
        model.set_weights(weights)
        result = loop.run_training(
            model, keras.optimizers.SGD(0.5), task.loss,
            lambda context, start_batch=0: train_dataset(context, 2, start_batch), STRATEGY,
            str(tmp_path / str(jit)), 2, iterations_per_loop=2, save_checkpoints_steps=0,
            gradient_accumulation_steps=2, jit_compile=jit, positional_input=True)
        assert result["global_step"] == 2
        finals.append(model.get_weights())
    moved = 0
    for start, reference, xla in zip(weights, *finals):
        assert_close(xla, reference, "weight after two steps")
        moved += int(not np.array_equal(reference, start))
    assert moved > len(weights) // 2


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_optimizer_update_compiles_under_xla(name):
    """A TPU compiles the whole replica step, the optimizer's update included: ALBERT's AdamW and LAMB (with
    the global-norm clip) compile with XLA and update as without it."""
    rng = np.random.default_rng(0)
    shapes = [(4, 3), (3,), (5, 4)]
    start = [rng.normal(size=s).astype(np.float32) for s in shapes]
    grads = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in shapes]
    finals = []
    for jit in (False, True):
        variables = [tf.Variable(value, name=f"layer_{i}/kernel") for i, value in enumerate(start)]
        optimizer = optimization.create_optimizer(1e-2, 10, 2, optimizer=name)
        optimizer.build(variables)

        @tf.function(jit_compile=jit)
        def update():
            optimizer.apply_gradients(zip(grads, variables))

        for _ in range(3):
            update()
        finals.append([v.numpy() for v in variables])
    for reference, xla in zip(*finals):
        assert_close(xla, reference, name)


# --- without a TPU -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [dict(strategy="tpu"), dict(use_tpu=True, tpu_name="local")])
def test_tpu_strategy_without_a_tpu_names_the_missing_tpu(kwargs):
    with pytest.raises(InputError, match="needs a TPU, and none was found"):
        distribution.get_strategy(**kwargs)


def test_use_tpu_run_stops_before_writing(data, tmp_path):
    output_dir = tmp_path / "out"
    with pytest.raises(InputError, match=r"needs a TPU.*tpu_name=local"):
        run_classifier("mrpc", data["glue"], str(output_dir), albert_config_file=data["config_file"],
                       spm_model_file=data["spm"], max_seq_length=tfx.SEQ, do_train=True, use_tpu=True)
    assert not output_dir.exists()
    assert inference.static_batches(STRATEGY, True) and not inference.static_batches(STRATEGY, False)
