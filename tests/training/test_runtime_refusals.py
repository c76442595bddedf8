"""What a run refuses before any work, on every backend: `use_tpu` on a machine without a TPU, and a
`model_parallel_devices` that does not divide every dimension the model axis shards (one line naming each), the
runner stopping before its output directory is made.

Runs under this process's Keras backend: TensorFlow in the newest set's tiers, JAX in the backends tier."""

import keras
import pytest

import albert_tf
from albert_tf.errors import InputError
from albert_tf.training import driver, jax_distribution
from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)
from support import backend_runs


def test_use_tpu_without_a_tpu_is_refused():
    with pytest.raises(InputError) as caught:
        driver.prepare_runtime(use_tpu=True, tpu_name="local")
    assert "needs a TPU, and none was found" in str(caught.value) and "\n" not in str(caught.value)


def test_model_parallel_devices_must_divide_every_sharded_dimension():
    config = albert_tf.AlbertConfig.from_dict(dict(backend_runs.CONFIG, intermediate_size=37, hidden_size=18))
    with pytest.raises(InputError) as caught:
        jax_distribution.check_model_parallel(config, 4, "albert_config.json")
    message = str(caught.value)
    assert "\n" not in message and "intermediate_size 37" in message and "hidden_size 18" in message, message
    assert "albert_config.json" in message
    jax_distribution.check_model_parallel(albert_tf.AlbertConfig.from_dict(backend_runs.CONFIG), 2, "c.json")



@pytest.mark.e2e
def test_a_runner_refuses_use_tpu_and_an_indivisible_model_axis_before_writing(glue_root, model_files,  # noqa: F811
                                                                               tmp_path):
    import json

    from albert_tf.tasks.glue.task import run_classifier

    with open(model_files["config_file"]) as f:
        config = dict(json.load(f), intermediate_size=37)
    config_file = str(tmp_path / "albert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    common = dict(spm_model_file=model_files["spm"], max_seq_length=32, train_batch_size=8, train_step=2,
                  warmup_step=1, do_train=True)
    cases = [(dict(albert_config_file=model_files["config_file"], use_tpu=True), "needs a TPU")]
    if keras.backend.backend() == "jax":          # the model axis is a JAX mesh's
        cases.append((dict(albert_config_file=config_file, model_parallel_devices=2), "intermediate_size 37"))
    for index, (kwargs, expected) in enumerate(cases):
        output_dir = tmp_path / f"out{index}"
        with pytest.raises(InputError, match=expected):
            run_classifier("sst-2", glue_root, str(output_dir), **common, **kwargs)
        assert not output_dir.exists()
