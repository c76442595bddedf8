"""`albert_tf.pipeline`: every task against what its runner (or the export's `serve_text`) writes for the same
model, input and options, on the fixtures the runner tests build; the source kinds; bad input."""

import json
import logging
import os
import re
import shutil
import sys
import tarfile

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

import albert_tf
from albert_tf.export import saved_model as export_lib
from albert_tf.checkpoints import convert, save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.tasks.glue import data as glue
from albert_tf.errors import InputError, MissingPackageError
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.squad import task as squad_task
from albert_tf.tasks.glue.task import run_classifier
from albert_tf.tasks.race.task import run_race
import original_checkpoints as oc
import squad_fixtures as fx
import race_fixtures
from glue_fixtures import glue_root, model_files  # noqa: F401  (fixtures)

SEQ = 48           # the SQuAD / fill-mask fixtures' max_seq_length
GLUE_SEQ = 32


def _built(model, choices=False, positions=False):
    shape = [1, 4, 8] if choices else [1, 8]
    ids = tf.ones(shape, tf.int32)
    inputs = {"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)}
    if positions:
        inputs["masked_lm_positions"] = tf.zeros([1, 2], tf.int32)
    model(inputs, training=False)
    return model


def _assert_same(got, expected):
    """Equal results, floats to 1e-6: a batch of one runs other matrix shapes than a batch of several."""
    if isinstance(expected, dict):
        assert set(got) == set(expected)
        for key in expected:
            _assert_same(got[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, abs=1e-6)
    else:
        assert got == expected


def _release(model, directory, config_file, spm_file):
    """A Google-style release directory: `model.ckpt-best` (TF1 names), `albert_config.json`, `30k-clean.model`."""
    os.makedirs(directory, exist_ok=True)
    save_tf1_checkpoint(model, os.path.join(directory, "model.ckpt-best"))
    shutil.copy(config_file, os.path.join(directory, "albert_config.json"))
    shutil.copy(spm_file, os.path.join(directory, "30k-clean.model"))
    return str(directory)


@pytest.fixture(scope="module")
def squad_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipelines_squad")
    return (d, *fx.model_files(d))


def _squad_inputs(dataset):
    ids, inputs = [], []
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                ids.append(qa["id"])
                inputs.append({"question": qa["question"], "context": paragraph["context"]})
    return ids, inputs


SQUAD_OPTIONS = dict(max_seq_length=SEQ, doc_stride=16, max_query_length=12, n_best_size=20, max_answer_length=30)


@pytest.mark.parametrize("v2", [False, True], ids=["v1.1", "v2.0"])
def test_question_answering_equals_run_squad_predictions(squad_env, v2):
    d, spm_file, config, config_file = squad_env
    tf.keras.utils.set_random_seed(5 + v2)
    model = _built(AlbertSquadV2(config) if v2 else AlbertSquadV1(config))
    release = _release(model, d / f"squad_release_{v2}", config_file, spm_file)
    dataset = fx.squad_dataset(with_negative=v2)
    data_file = fx.write_squad(str(d / f"predict_{v2}.json"), with_negative=v2)
    out = str(d / f"squad_out_{v2}")
    result = squad_task.run_squad(output_dir=out, init_checkpoint=release, predict_file=data_file, do_predict=True,
                                  version_2_with_negative=v2, predict_batch_size=32, **SQUAD_OPTIONS)
    expected = json.load(open(os.path.join(out, "predictions.json")))
    nbest = json.load(open(os.path.join(out, "nbest_predictions.json")))
    ids, inputs = _squad_inputs(dataset)

    options = dict(SQUAD_OPTIONS)
    if v2:   # The threshold the run tuned on the file, as the run's final predictions use it.
        options["null_score_diff_threshold"] = result["eval"]["null_score_diff_threshold"]
    pipe = albert_tf.pipeline("question-answering", release, **options)
    answers = pipe(inputs)
    assert {i: a["answer"] for i, a in zip(ids, answers)} == expected
    for i, item, answer in zip(ids, inputs, answers):
        assert 0.0 < answer["score"] <= 1.0
        if answer["answer"]:
            assert item["context"][answer["start"]:answer["end"]] == answer["answer"]
            # The pipeline cuts batches to their longest member: float32 sums of other shapes.
            assert answer["score"] == pytest.approx(nbest[i][0]["probability"], rel=1e-5)
    # The paragraphs are longer than one window: several doc-stride windows per question.
    one = pipe(question=inputs[0]["question"], context=inputs[0]["context"])
    _assert_same(one, answers[0])
    assert len(pipe._encode([pipe._check(inputs[0], 0)])[1]) > 1
    with pytest.raises(InputError, match="non-empty string `context`"):
        pipe(question=inputs[0]["question"])
    with pytest.raises(InputError, match="non-empty string `context`"):
        pipe([{"question": "Who?", "context": ""}])
    if v2:
        # Without a threshold the beam head answers its best span: the first n-best entry of the run.
        spans = albert_tf.pipeline("question-answering", release, **SQUAD_OPTIONS)(inputs)
        assert [a["answer"] for a in spans] == [nbest[i][0]["text"] for i in ids]
        # A threshold in the middle of the null-score differences: some questions are answered "", as in a
        # run_squad.py with the same fixed threshold.
        odds = json.load(open(os.path.join(out, "null_odds.json")))
        threshold = float(np.median(list(odds.values())))
        fixed_out = str(d / "squad_out_fixed")
        squad_task.run_squad(output_dir=fixed_out, init_checkpoint=release, predict_file=data_file,
                             do_predict=True, version_2_with_negative=True, predict_batch_size=32,
                             null_score_diff_threshold=threshold, **SQUAD_OPTIONS)
        expected = json.load(open(os.path.join(fixed_out, "predictions.json")))
        answers = albert_tf.pipeline("question-answering", release, null_score_diff_threshold=threshold,
                                     **SQUAD_OPTIONS)(inputs)
        assert {i: a["answer"] for i, a in zip(ids, answers)} == expected
        empty = [a for a in answers if a["answer"] == ""]
        assert 0 < len(empty) < len(answers)
        for a in empty:
            assert (a["start"], a["end"]) == (0, 0) and 0.0 < a["score"] < 1.0


def _mnli_inputs(root):
    examples = glue.get_processor("mnli", use_spm=False).get_test_examples(root)
    return [(e.text_a, e.text_b) for e in examples]


def test_text_classification_equals_run_classifier_test_results(glue_root, model_files, tmp_path):  # noqa: F811
    tf.keras.utils.set_random_seed(3)
    model = _built(AlbertClassifier(model_files["config"], num_labels=3))
    release = _release(model, tmp_path / "mnli_release", model_files["config_file"], model_files["spm"])
    out = tmp_path / "mnli_out"
    run_classifier("mnli", glue_root, str(out), init_checkpoint=release, do_predict=True,
                   max_seq_length=GLUE_SEQ, predict_batch_size=4)
    expected = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)
    inputs = _mnli_inputs(glue_root)
    assert len(inputs) == len(expected) == 3

    pipe = albert_tf.pipeline("text-classification", release, task_name="mnli", max_seq_length=GLUE_SEQ)
    results = pipe(inputs)
    np.testing.assert_allclose([r["scores"] for r in results], expected, atol=1e-5)
    labels = ["contradiction", "entailment", "neutral"]   # the original MnliProcessor's order
    assert [r["label"] for r in results] == [labels[i] for i in expected.argmax(1)]
    assert all(r["score"] == max(r["scores"]) for r in results)
    _assert_same(pipe(inputs[0]), results[0])
    _assert_same(pipe({"text_a": inputs[0][0], "text_b": inputs[0][1]}), results[0])
    named = albert_tf.pipeline("text-classification", release, max_seq_length=GLUE_SEQ,
                               labels=["x", "y", "z"])(inputs[0])
    default = albert_tf.pipeline("text-classification", release, max_seq_length=GLUE_SEQ)(inputs[0])
    assert named["label"] in "xyz" and default["label"].startswith("LABEL_")
    assert named["scores"] == default["scores"]
    _assert_same(named["scores"], results[0]["scores"])

    # The same model exported (albert-export): its serving_default on the same packed ids.
    exported = export_lib.export_saved_model(model, str(tmp_path / "mnli_export"), spm_model_file=model_files["spm"],
                                             max_seq_length=GLUE_SEQ)
    from_export = albert_tf.pipeline("text-classification", str(tmp_path / "mnli_export"), task_name="mnli",
                                     max_seq_length=GLUE_SEQ)(inputs)
    assert os.path.basename(exported) == "1"
    np.testing.assert_allclose([r["scores"] for r in from_export], expected, atol=1e-5)


def test_regression_head_gives_the_run_classifier_value(glue_root, model_files, tmp_path):  # noqa: F811
    tf.keras.utils.set_random_seed(4)
    model = _built(AlbertClassifier(model_files["config"], num_labels=1))
    release = _release(model, tmp_path / "stsb_release", model_files["config_file"], model_files["spm"])
    out = tmp_path / "stsb_out"
    run_classifier("sts-b", glue_root, str(out), init_checkpoint=release, do_predict=True,
                   max_seq_length=GLUE_SEQ, predict_batch_size=4)
    expected = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)[:, 0]
    examples = glue.get_processor("sts-b", use_spm=False).get_test_examples(glue_root)
    results = albert_tf.pipeline("text-classification", release, task_name="sts-b", max_seq_length=GLUE_SEQ)(
        [(e.text_a, e.text_b) for e in examples])
    assert all(set(r) == {"score"} for r in results)
    np.testing.assert_allclose([r["score"] for r in results], expected, atol=1e-5)


def test_multiple_choice_equals_run_race_predictions(tmp_path, capsys):
    root = race_fixtures.write_tree(str(tmp_path / "race"), "all")
    spm_file = race_fixtures.train_spm(str(tmp_path))
    config = AlbertConfig(vocab_size=spm.SentencePieceProcessor(model_file=spm_file).get_piece_size(),
                          embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64)
    config_file = str(tmp_path / "albert_config.json")
    config.to_json_file(config_file)
    tf.keras.utils.set_random_seed(9)
    model = _built(AlbertRace(config), choices=True)
    release = _release(model, tmp_path / "race_release", config_file, spm_file)
    out = tmp_path / "race_out"
    run_race(data_dir=root, output_dir=str(out), init_checkpoint=release, do_train=False, do_eval=False,
             do_predict=True, max_seq_length=race_fixtures.MAX_SEQ, max_qa_length=race_fixtures.MAX_QA,
             predict_batch_size=3)
    rows = [line.rstrip("\n").split("\t") for line in open(out / "predictions.tsv")][1:]
    # The test split as run_race reads it: middle then high, article by article, question by question.
    inputs = []
    for level in ("middle", "high"):
        seed, n, answers = race_fixtures.SPLITS["test"][level]
        for article in race_fixtures.make_articles(seed, n, answers):
            for question, options in zip(article["questions"], article["options"]):
                inputs.append({"article": article["article"], "question": question, "options": options})
    assert len(inputs) == len(rows) == 8
    pipe = albert_tf.pipeline("multiple-choice", release, max_seq_length=race_fixtures.MAX_SEQ,
                              max_qa_length=race_fixtures.MAX_QA, batch_size=5)
    capsys.readouterr()
    results = pipe(inputs)
    assert "multiple-choice" in capsys.readouterr().err   # more than one batch: a progress bar
    np.testing.assert_allclose([r["scores"] for r in results], [[float(p) for p in r[4:]] for r in rows],
                               atol=1e-6)
    assert ["ABCD"[r["choice"]] for r in results] == [r[2] for r in rows]
    _assert_same(pipe(inputs[0]), results[0])
    assert capsys.readouterr().err == ""


FILL_MASK_TEXTS = ["The Eiffel Tower was [MASK] in 1889 for the Exposition.",
                   "[MASK] is the largest city in [mask], with about 421,000 inhabitants.",
                   "Café culture in Vienna dates back to [MASK]"]


@pytest.fixture(scope="module")
def pretrainer_sources(squad_env):
    """One seeded AlbertPretrainer as a release dir, its tarball, a Hugging Face dir, a keras-hub preset (the
    encoder), a TF-Hub TF1 module, one of our object-based checkpoints and an albert-export."""
    d, spm_file, config, config_file = squad_env
    tf.keras.utils.set_random_seed(17)
    model = _built(AlbertPretrainer(config), positions=True)
    release = _release(model, d / "pretrainer_release", config_file, spm_file)
    tarball = str(d / "pretrainer_release.tar.gz")
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(release, arcname="pretrainer_release")
    hf_dir = str(d / "pretrainer_hf")
    convert(release, hf_dir, output_format="hf")
    keras_hub_dir = str(d / "pretrainer_keras_hub")
    convert(release, keras_hub_dir, output_format="keras_hub")
    hub = d / "pretrainer_tfhub"   # a TF-Hub TF1 module: variables/ and assets/
    save_tf1_checkpoint(model, str(hub / "variables" / "variables"))
    (hub / "assets").mkdir()
    shutil.copy(config_file, hub / "assets" / "albert_config.json")
    shutil.copy(spm_file, hub / "assets" / "30k-clean.model")
    (hub / "tfhub_module.pb").write_bytes(b"")
    ours = d / "pretrainer_ours"
    oc.save_our_checkpoint(model, str(ours / "model.ckpt-7"))
    shutil.copy(config_file, ours / "albert_config.json")
    shutil.copy(spm_file, ours / "30k-clean.model")
    export_dir = str(d / "pretrainer_export")
    export_lib.export_saved_model(model, export_dir, spm_model_file=spm_file, max_seq_length=SEQ)
    return {"model": model, "release": release, "tarball": tarball, "hf": hf_dir, "keras_hub": keras_hub_dir,
            "tfhub": str(hub), "ours": str(ours), "export": export_dir, "spm": spm_file}


def test_fill_mask_equals_the_export_serve_text(pretrainer_sources):
    import tensorflow_text  # noqa: F401  (registers the ops of the raw-text signature)

    loaded = tf.saved_model.load(os.path.join(pretrainer_sources["export"], "1"))
    served = loaded.signatures["serve_text"](text_a=tf.constant(FILL_MASK_TEXTS),
                                             text_b=tf.constant([""] * len(FILL_MASK_TEXTS)))
    logits = served["mlm_logits"].numpy().astype(np.float64)
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    weights = served["mlm_weights"].numpy()

    for source in ("release", "hf", "export"):
        pipe = albert_tf.pipeline("fill-mask", pretrainer_sources[source], max_seq_length=SEQ)
        results = pipe(FILL_MASK_TEXTS, top_k=3)
        assert [len(r) for r in results] == [int(w.sum()) for w in weights] == [1, 2, 1]
        for text_result, probs in zip(results, probabilities):
            for mask_result, mask_probs in zip(text_result, probs):
                top = np.argsort(-mask_probs, kind="stable")[:3]
                assert [c["token_id"] for c in mask_result] == list(top)
                np.testing.assert_allclose([c["score"] for c in mask_result], mask_probs[top], atol=1e-5)
                assert all(isinstance(c["token"], str) for c in mask_result)
        _assert_same(pipe(FILL_MASK_TEXTS[0], top_k=3), results[0])
        assert len(pipe(FILL_MASK_TEXTS[0])[0]) == 5   # top_k defaults to 5


def test_feature_extraction_reads_every_source_kind(pretrainer_sources):
    encoder = pretrainer_sources["model"].encoder
    texts = ["The river Amazon discharges water.", ("Zürich is a city.", "It lies at a lake.")]
    tokenizer = albert_tf.text.tokenization.FullTokenizer(spm_model_file=pretrainer_sources["spm"])
    expected = []
    for text in texts:
        text_a, text_b = (text, None) if isinstance(text, str) else text
        example = glue.InputExample("x", albert_tf.text.tokenization.preprocess_text(text_a, lower=True),
                                    albert_tf.text.tokenization.preprocess_text(text_b, lower=True) if text_b else None,
                                    "0")
        f = glue.convert_single_example(9, example, ["0"], SEQ, tokenizer, "x")
        out = encoder({k: tf.constant([getattr(f, k)]) for k in ("input_ids", "input_mask", "segment_ids")})
        n = sum(f.input_mask)
        expected.append((out["pooled_output"].numpy()[0], out["sequence_output"].numpy()[0, :n]))
    for kind in ("release", "tarball", "hf", "keras_hub", "tfhub", "ours", "export"):
        results = albert_tf.pipeline("feature-extraction", pretrainer_sources[kind], max_seq_length=SEQ)(texts)
        for result, (pooled, sequence) in zip(results, expected):
            assert result["sequence_output"].shape == sequence.shape, kind
            np.testing.assert_allclose(result["pooled_output"], pooled, atol=1e-5, err_msg=kind)
            np.testing.assert_allclose(result["sequence_output"], sequence, atol=1e-5, err_msg=kind)


def test_without_tqdm_a_pipeline_runs_without_its_bar_and_progress_true_says_what_it_needs(pretrainer_sources,
                                                                                           monkeypatch, capsys):
    """A plain install has no tqdm: the default bar is left out, `progress=True` is a one-line
    MissingPackageError."""
    texts = ["The river Amazon discharges water.", "Zürich is a city.", "It lies at a lake."]
    expected = albert_tf.pipeline("feature-extraction", pretrainer_sources["release"], max_seq_length=SEQ,
                                  batch_size=1, progress=False)(texts)
    monkeypatch.setitem(sys.modules, "tqdm", None)   # `import tqdm.auto` now raises ImportError.
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    capsys.readouterr()
    results = albert_tf.pipeline("feature-extraction", pretrainer_sources["release"], max_seq_length=SEQ,
                                 batch_size=1)(texts)
    assert "feature-extraction" not in capsys.readouterr().err
    for result, reference in zip(results, expected):
        np.testing.assert_array_equal(result["pooled_output"], reference["pooled_output"])
    with pytest.raises(MissingPackageError, match=r"^`progress=True` draws its bar with tqdm: pip install tqdm$"):
        albert_tf.pipeline("feature-extraction", pretrainer_sources["release"], max_seq_length=SEQ, batch_size=1,
                           progress=True)(texts)


def test_lengths_come_from_the_export_or_the_config_and_long_questions_warn(squad_env, pretrainer_sources,
                                                                            caplog):
    """`pipeline(task, export_dir)` packs to the export's length (48 here), a checkpoint's pipeline to its
    `max_position_embeddings` (64) where the default (512, 384) does not fit; a question cut to
    `max_query_length` is said in a warning (the original cuts it too)."""
    export = albert_tf.pipeline("fill-mask", pretrainer_sources["export"])
    assert export.max_seq_length == SEQ
    _assert_same(export(FILL_MASK_TEXTS, top_k=3),
                 albert_tf.pipeline("fill-mask", pretrainer_sources["export"], max_seq_length=SEQ)(FILL_MASK_TEXTS,
                                                                                                   top_k=3))
    assert albert_tf.pipeline("fill-mask", pretrainer_sources["release"]).max_seq_length == 64
    d, spm_file, config, config_file = squad_env
    release = _release(_built(AlbertSquadV1(config)), d / "squad_lengths", config_file, spm_file)
    qa = albert_tf.pipeline("question-answering", release)
    assert (qa.max_seq_length, qa.max_query_length) == (64, 60)
    qa = albert_tf.pipeline("question-answering", release, max_query_length=4)
    with caplog.at_level(logging.WARNING):
        qa(question="who built the tower in the city by the river ?", context="the tower was built by a man .")
    assert re.search(r"question 0 has \d+ tokens; only its first `max_query_length=4` are used", caplog.text)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        qa(question="who ?", context="the tower was built by a man .")
    assert "max_query_length" not in caplog.text


def test_the_registry_lists_every_task_pipeline():
    """Each task's pipeline registers itself from its own folder; `albert_tf.pipelines` names them through the
    registry, and the kinds that serve a task come from the kinds' serving specs."""
    from albert_tf import pipelines, registry

    classes = registry.pipelines()
    assert sorted(classes) == ["feature-extraction", "fill-mask", "multiple-choice", "question-answering",
                               "text-classification", "token-classification"]
    assert classes["fill-mask"].__module__ == "albert_tf.tasks.pretraining.pipeline"
    assert classes["token-classification"].__module__ == "albert_tf.tasks.ner.pipeline"
    assert pipelines.TextClassificationPipeline is classes["text-classification"]
    assert pipelines.PIPELINES == classes
    assert classes["feature-extraction"].export_kinds == ("encoder", "pretrainer")
    assert classes["question-answering"].export_kinds == ("squad_v1", "squad_v2")
    with pytest.raises(AttributeError):
        pipelines.NoSuchPipeline  # noqa: B018


def test_an_export_without_its_metadata_is_refused(pretrainer_sources, tmp_path):
    """The kind comes from the export's `assets.extra/albert_export.json`, never from its outputs: an export
    without the file (an earlier version's) is an InputError naming the directory and what to do."""
    with open(os.path.join(pretrainer_sources["export"], "1", "assets.extra", "albert_export.json")) as f:
        metadata = json.load(f)
    assert metadata["format"] == "albert_tf.export/1" and metadata["kind"] == "pretrainer"
    assert metadata["max_seq_length"] == SEQ and metadata["max_predictions_per_seq"] == 20
    old = tmp_path / "old_export"
    shutil.copytree(pretrainer_sources["export"], old)
    os.remove(old / "1" / "assets.extra" / "albert_export.json")
    with pytest.raises(InputError, match=re.escape(f"`{old / '1'}` has no `assets.extra/albert_export.json`")
                       + ".*re-export it with this version"):
        albert_tf.pipeline("feature-extraction", str(old))


def test_bad_input_is_an_input_error(pretrainer_sources):
    release = pretrainer_sources["release"]
    with pytest.raises(InputError, match="Unknown task 'summarization'"):
        albert_tf.pipeline("summarization", release)
    with pytest.raises(InputError, match="no classifier head"):
        albert_tf.pipeline("text-classification", release)
    with pytest.raises(InputError, match="no squad_v1 head"):
        albert_tf.pipeline("question-answering", release)
    with pytest.raises(InputError, match="needs an export of classifier"):
        albert_tf.pipeline("text-classification", pretrainer_sources["export"])
    with pytest.raises(InputError, match="Unknown options .*'max_seq_len'"):
        albert_tf.pipeline("fill-mask", release, max_seq_len=SEQ)
    with pytest.raises(InputError, match="sequence length 512"):
        albert_tf.pipeline("fill-mask", release, max_seq_length=512)
    pipe = albert_tf.pipeline("fill-mask", release, max_seq_length=SEQ)
    with pytest.raises(InputError, match=r"no `\[MASK\]`"):
        pipe("no mask here")
    with pytest.raises(InputError, match="must be a string"):
        pipe(3)
    with pytest.raises(InputError, match="`top_k` must be a positive int"):
        pipe("a [MASK]", top_k=0)


# --- LiteRT exports (albert-export --format=tflite) -------------------------------------------------------------


def _close(got, expected, atol):
    """Equal results, floats to `atol`."""
    if isinstance(expected, dict):
        assert set(got) == set(expected)
        for key in expected:
            _close(got[key], expected[key], atol)
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _close(g, e, atol)
    elif isinstance(expected, (float, np.ndarray)):
        np.testing.assert_allclose(got, expected, atol=atol)
    else:
        assert got == expected


def test_fill_mask_and_features_on_a_tflite_export(pretrainer_sources, tmp_path):
    from albert_tf.export import lite

    model = pretrainer_sources["model"]
    path = lite.export_tflite(model, str(tmp_path / "lite"), spm_model_file=pretrainer_sources["spm"],
                              max_seq_length=SEQ, batch_size=2, max_predictions_per_seq=4)
    texts = ["The river Amazon discharges water.", ("Zürich is a city.", "It lies at a lake.")]
    for source in (path, str(tmp_path / "lite")):   # the file or its directory
        expected = albert_tf.pipeline("fill-mask", pretrainer_sources["release"], max_seq_length=SEQ)(FILL_MASK_TEXTS,
                                                                                                     top_k=3)
        _close(albert_tf.pipeline("fill-mask", source)(FILL_MASK_TEXTS, top_k=3), expected, 1e-4)
    expected = albert_tf.pipeline("feature-extraction", pretrainer_sources["release"], max_seq_length=SEQ)(texts)
    _close(albert_tf.pipeline("feature-extraction", path)(texts), expected, 1e-4)
    fixed = lite.export_tflite(model, str(tmp_path / "fixed"), spm_model_file=pretrainer_sources["spm"],
                               max_seq_length=SEQ, batch_size=2, max_predictions_per_seq=4, dynamic_shapes=False)
    _close(albert_tf.pipeline("feature-extraction", fixed)(texts), expected, 1e-4)
    with pytest.raises(InputError, match="fixed inputs of length 48"):
        albert_tf.pipeline("fill-mask", fixed, max_seq_length=32)
    with pytest.raises(InputError, match="needs an export of classifier"):
        albert_tf.pipeline("text-classification", path)
    with pytest.raises(InputError, match="at most 4 masks"):
        albert_tf.pipeline("fill-mask", fixed)(" ".join(["[MASK]"] * 5))
    assert len(albert_tf.pipeline("fill-mask", path)(" ".join(["[MASK]"] * 5))) == 5   # resizable: any number


@pytest.mark.parametrize("v2", [False, True], ids=["v1.1", "v2.0"])
def test_question_answering_on_a_tflite_export(squad_env, v2):
    from albert_tf.export import lite

    d, spm_file, config, config_file = squad_env
    tf.keras.utils.set_random_seed(25 + v2)
    model = _built(AlbertSquadV2(config) if v2 else AlbertSquadV1(config))
    release = _release(model, d / f"lite_squad_release_{v2}", config_file, spm_file)
    path = lite.export_tflite(model, str(d / f"lite_squad_{v2}"), spm_model_file=spm_file, max_seq_length=SEQ)
    dataset = fx.squad_dataset(with_negative=v2, max_questions=2)
    _, inputs = _squad_inputs(dataset)
    options = dict(SQUAD_OPTIONS)
    del options["max_seq_length"]
    expected = albert_tf.pipeline("question-answering", release, max_seq_length=SEQ, **options)(inputs)
    _close(albert_tf.pipeline("question-answering", path, **options)(inputs), expected, 1e-4)


def test_text_classification_on_a_tflite_export(model_files, tmp_path):  # noqa: F811
    from albert_tf.export import lite

    tf.keras.utils.set_random_seed(31)
    model = _built(AlbertClassifier(model_files["config"], num_labels=3))
    release = _release(model, tmp_path / "release", model_files["config_file"], model_files["spm"])
    path = lite.export_tflite(model, str(tmp_path / "lite"), spm_model_file=model_files["spm"], max_seq_length=GLUE_SEQ,
                              batch_size=4, labels=["contradiction", "entailment", "neutral"])
    texts = ["the cat sat", ("a kitten here", "the cat sat"), "premise number", "dev matched", "test the cat"]
    expected = albert_tf.pipeline("text-classification", release, max_seq_length=GLUE_SEQ,
                                  labels=["contradiction", "entailment", "neutral"])(texts)
    _close(albert_tf.pipeline("text-classification", path)(texts), expected, 1e-4)
