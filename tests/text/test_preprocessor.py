"""`AlbertPreprocessor` and the Keras task models on raw strings: the original's packing, `compile()` defaults
and plain Keras losses, fine-tuning from strings, `.keras` save/load in a fresh process, RACE, the pretrainer's
`[MASK]` predictions, SQuAD's first span, `from_pretrained(..., preprocessor=...)` and input errors."""

import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import tokenization
from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.tasks.glue import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.tasks.squad import kind as squad_kind
from albert_tf.errors import InputError
from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.text.preprocessor import AlbertPreprocessor
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training.optimization import AdamWeightDecay, AlbertLearningRateSchedule, Lamb
import fixtures_text as ft
from albert_tf.text import vocab as vocab_lib
from glue_fixtures import model_files, sentiment_rows  # noqa: F401  (`model_files` is a fixture)

MAX_SEQ = 32


def _texts_and_labels(rows):
    return [text for text, _ in rows], np.array([int(label) for _, label in rows])


def _ids(features):
    return {name: features[name].numpy().tolist() for name in ("input_ids", "input_mask", "segment_ids")}


@pytest.fixture(scope="module")
def number_spm(tmp_path_factory):
    """A SentencePiece model of number-heavy text, with `1,`-like pieces that the digit-comma rule splits."""
    root = tmp_path_factory.mktemp("numbers")
    corpus = ft.write_number_corpus(root / "numbers.txt")
    return vocab_lib.train_sentencepiece([corpus], str(root / "num"), vocab_size=400, minloglevel=2,
                                         hard_vocab_limit=False)


@pytest.mark.parametrize("which", ["sentiment", "numbers"])
def test_ids_equal_the_original_packing(model_files, number_spm, which):
    """Singles and pairs equal `FullTokenizer` + `glue.convert_single_example` (truncation, the digit-comma
    rule, an empty second text), and the config round trip keeps the tokenizer."""
    spm_file = model_files["spm"] if which == "sentiment" else number_spm
    tokenizer = FullTokenizer(spm_model_file=spm_file)
    pre = AlbertPreprocessor(spm_file, max_seq_length=16)
    if which == "sentiment":
        singles = ["The movie was  good .", "the film was very very bad and the plot was awful and sad and ugly .",
                   "Ａ  ＦＩＬＭ   happy", ""]
        pairs = [("the movie was good .", "a very bad film and a very sad story and a poor plot ."),
                 ("It was great .", ""), ("a", "b")]
    else:
        lines = ft.number_lines(12, seed=3)
        singles = ["founded in 1801, it is", "a total area of 21,218 square kilometres (1,680 km2), it"] + lines[:6]
        pairs = list(zip(lines[6:], lines[:6])) + [("In 1990, it was", "")]

    def expected(text_a, text_b):
        example = glue.InputExample("g", tokenization.preprocess_text(text_a, lower=True),
                                    tokenization.preprocess_text(text_b, lower=True) if text_b is not None else None,
                                    "0")
        f = glue.convert_single_example(0, example, ["0", "1"], 16, tokenizer, "sst-2")
        return [f.input_ids, f.input_mask, f.segment_ids]

    got = _ids(pre(singles))
    assert [list(r) for r in zip(got["input_ids"], got["input_mask"], got["segment_ids"])] == \
        [expected(text, None) for text in singles]
    got = _ids(pre(tuple(zip(*pairs))))
    assert [list(r) for r in zip(got["input_ids"], got["input_mask"], got["segment_ids"])] == \
        [expected(a, b) for a, b in pairs]
    assert _ids(pre({"text_a": [a for a, _ in pairs], "text_b": [b for _, b in pairs]})) == got

    clone = AlbertPreprocessor.from_config(pre.get_config())
    assert clone.spm_model_proto == pre.spm_model_proto and clone.max_seq_length == 16
    assert _ids(clone(tuple(zip(*pairs)))) == got


def test_bytes_that_are_not_utf8_are_dropped_as_the_original_decodes_them(model_files):
    """Raw bytes that are not UTF-8: the original's `convert_to_unicode` under Python 3 (`bytes.decode("utf-8",
    "ignore")`), then its packing; singles and pairs."""
    tokenizer = FullTokenizer(spm_model_file=model_files["spm"])
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=16)
    text_a = [b"the movie was g\xc3ood \xff", b"caf\xe9 \xe2\x82 was \xc0\xaf happy \xed\xa0\x80", b"\x80\xbf"]
    text_b = [b"", b"a \xf0\x9f\x98 sad plot", b"\xf4\x90\x80\x80bad"]

    def expected(a, b):
        example = glue.InputExample("g", tokenization.preprocess_text(tokenization.convert_to_unicode(a), lower=True),
                                    tokenization.preprocess_text(tokenization.convert_to_unicode(b), lower=True)
                                    if b else None, "0")
        f = glue.convert_single_example(0, example, ["0", "1"], 16, tokenizer, "sst-2")
        return [f.input_ids, f.input_mask, f.segment_ids]

    got = _ids(pre({"text_a": tf.constant(text_a), "text_b": tf.constant(text_b)}))
    assert [list(r) for r in zip(got["input_ids"], got["input_mask"], got["segment_ids"])] == \
        [expected(a, b) for a, b in zip(text_a, text_b)]
    assert tokenization.convert_to_unicode(text_a[0]) == "the movie was good "


@pytest.mark.e2e
def test_fine_tune_from_strings_save_and_reload_in_a_fresh_process(model_files, tmp_path):
    """`compile()` + `fit(x=strings, y=labels)` learns the sentiment task; the `.keras` file reloads in a new
    process (preprocessor, optimizer and all) and predicts the same probabilities from strings."""
    keras.utils.set_random_seed(20261201)  # Initialisation, dropout and the shuffle: no flaky threshold.
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX_SEQ)
    model = AlbertClassifier(model_files["config"], num_labels=2, preprocessor=pre)
    model.compile(learning_rate=5e-4, num_train_steps=300, num_warmup_steps=20)
    assert isinstance(model.optimizer, AdamWeightDecay)
    schedule = keras.saving.deserialize_keras_object(model.optimizer.get_config()["learning_rate"])
    assert isinstance(schedule, AlbertLearningRateSchedule)
    assert (schedule.init_lr, schedule.num_train_steps, schedule.num_warmup_steps) == (5e-4, 300, 20)
    x, y = _texts_and_labels(sentiment_rows(1, 320))
    dev_x, dev_y = _texts_and_labels(sentiment_rows(2, 100))
    model.fit(x=x, y=y, batch_size=16, epochs=15, verbose=0)
    result = model.evaluate(dev_x, dev_y, batch_size=50, verbose=0, return_dict=True)
    assert result["accuracy"] >= 0.9, result

    out = model.predict(dev_x, verbose=0)
    probabilities = out["probabilities"]
    assert probabilities.shape == (100, 2) and out["input_ids"].shape == (100, MAX_SEQ)
    assert np.mean(out["predictions"] == dev_y) == pytest.approx(result["accuracy"])
    path = str(tmp_path / "sentiment.keras")
    model.save(path)
    texts_file = str(tmp_path / "texts.txt")
    with open(texts_file, "w", encoding="utf-8") as f:
        f.write("\n".join(dev_x))
    out_file = str(tmp_path / "probabilities.npy")
    script = (
        "import sys, keras, numpy as np, albert_tf\n"
        "albert_tf.AlbertClassifier  # Registers the albert_tf Keras classes.\n"
        "model = keras.saving.load_model(sys.argv[1])\n"
        "texts = open(sys.argv[2], encoding='utf-8').read().split('\\n')\n"
        "assert model.preprocessor is not None and model.preprocessor.max_seq_length == 32\n"
        "assert type(model.optimizer).__name__ == 'AdamWeightDecay', type(model.optimizer)\n"
        "assert int(model.optimizer.iterations.numpy()) == 300, model.optimizer.iterations\n"
        "np.save(sys.argv[3], model.predict(texts, verbose=0)['probabilities'])\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", script, path, texts_file, out_file], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    np.testing.assert_allclose(np.load(out_file), probabilities, rtol=1e-5, atol=1e-6)


def test_plain_keras_losses_work_on_the_logits(model_files):
    """`compile(loss=<Keras loss>)` sees the logits, on token ids (the KeyError of issue #27) and on strings;
    `compile()` on a regression head picks the squared error."""
    config = model_files["config"]
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, config.vocab_size, [8, 10]).astype("int32")
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    labels = np.array([0, 1, 2, 1, 0, 2, 1, 0])
    model = AlbertClassifier(config, num_labels=3)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(features, labels, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]) and "accuracy" in history.history
    out = model(features, training=False)
    expected = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, out["logits"]).numpy()
    assert model.evaluate(features, labels, verbose=0, return_dict=True)["loss"] == pytest.approx(expected, rel=1e-5)

    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX_SEQ)
    texted = AlbertClassifier(encoder=model.encoder, num_labels=3, preprocessor=pre)
    texted.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), learning_rate=1e-4,
                   num_train_steps=10)
    x, _ = _texts_and_labels(sentiment_rows(3, 8))
    history = texted.fit(x, labels, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]) and "accuracy" in history.history

    regression = AlbertClassifier(encoder=model.encoder, num_labels=1, preprocessor=pre)
    regression.compile(learning_rate=1e-4, num_train_steps=10)
    assert isinstance(regression.loss, keras.losses.MeanSquaredError)
    targets = np.linspace(0.0, 5.0, 8).astype("float32")
    history = regression.fit((x, x[::-1]), targets, batch_size=4, epochs=1, verbose=0)
    predicted = regression(features, training=False)["logits"].numpy()
    assert np.isfinite(history.history["loss"][0]) and predicted.shape == (8,)


def _race_inputs():
    articles = ["The cat sat on the mat . It was a happy cat and the story was nice .",
                "A film about a sad kitten , the plot was poor and the movie was bad ."]
    questions = ["What was the cat ?", "The plot was _ ."]
    options = [["happy", "sad", "ugly", "awful"], ["great", "poor", "fine", "nice"]]
    return {"article": articles, "question": questions, "options": options}, np.array([0, 1])


def test_race_strings_pack_as_the_original_train_and_predict(model_files):
    tokenizer = FullTokenizer(spm_model_file=model_files["spm"])
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=24, max_qa_length=6)
    inputs, labels = _race_inputs()
    features = pre(inputs)
    assert features["input_ids"].shape == (2, 4, 24)
    process = race.make_process_text()
    for i in range(2):
        obj = {"article": inputs["article"][i], "questions": [inputs["question"][i]],
               "options": [inputs["options"][i]], "answers": ["A"]}
        example = race.examples_from_object(obj, "test", "middle", process)[0]
        ids, mask, segments, _ = race.encode_example(example, tokenizer, 24, 6)
        assert features["input_ids"][i].numpy().tolist() == ids
        assert features["input_mask"][i].numpy().tolist() == mask
        assert features["segment_ids"][i].numpy().tolist() == segments

    keras.utils.set_random_seed(2)
    model = AlbertRace(model_files["config"], preprocessor=pre)
    model.compile(learning_rate=1e-3, num_train_steps=4)
    assert isinstance(model.optimizer, AdamWeightDecay)
    history = model.fit(inputs, labels, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all() and "accuracy" in history.history
    out = model.predict(inputs, verbose=0)
    assert out["probabilities"].shape == (2, 4)
    np.testing.assert_allclose(out["probabilities"], model(features, training=False)["probabilities"].numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(inputs)["logits"].numpy(), out["logits"], rtol=1e-5, atol=1e-6)
    assert model.evaluate(inputs, labels, verbose=0, return_dict=True)["accuracy"] in (0.0, 0.5, 1.0)


def test_pretrainer_predicts_each_mask_of_raw_text(model_files):
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX_SEQ, max_predictions_per_seq=4)
    model = AlbertPretrainer(model_files["config"], preprocessor=pre)
    texts = ["the movie was [MASK] .", "a [mask] film and a [MASK] plot .", "no masks here"]
    out = model.predict(texts, batch_size=2, verbose=0)
    mask_id = pre.pipeline.mask_id
    assert out["mlm_logits"].shape == (3, 4, model.config.vocab_size)
    for row in range(3):
        positions = np.flatnonzero(out["input_ids"][row] == mask_id).tolist()
        assert len(positions) == [1, 2, 0][row]
        assert out["masked_lm_positions"][row].tolist() == positions + [0] * (4 - len(positions))
        assert out["masked_lm_weights"][row].tolist() == [1] * len(positions) + [0] * (4 - len(positions))
    features = {name: tf.constant(out[name]) for name in ("input_ids", "masked_lm_positions")}
    features["input_mask"] = tf.cast(features["input_ids"] > 0, tf.int32)
    direct = model(features, training=False)
    np.testing.assert_allclose(out["mlm_logits"], direct["mlm_logits"].numpy(), rtol=1e-5, atol=1e-5)
    model.compile()
    assert isinstance(model.optimizer, Lamb)


def test_squad_models_take_question_and_context(model_files):
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX_SEQ, max_query_length=8)
    inputs = {"question": ["what was the movie ?", "what was sad ?"],
              "context": ["the movie was good and the plot was nice .", "a very sad story ."]}
    packed = pre(inputs)
    ids = pre.pipeline.tokenize(tf.constant(inputs["question"]))
    context = pre.pipeline.tokenize(tf.constant(inputs["context"]))
    expected = squad_kind.pack_squad(ids, context, MAX_SEQ, 8, 2, 3)
    for name in ("input_ids", "segment_ids", "p_mask"):
        np.testing.assert_array_equal(packed[name].numpy(), expected[name].numpy())
    v1 = AlbertSquadV1(model_files["config"], preprocessor=pre)
    out = v1.predict(inputs, verbose=0)
    assert out["start_logits"].shape == (2, MAX_SEQ) and out["p_mask"].tolist() == packed["p_mask"].numpy().tolist()
    v2 = AlbertSquadV2(model_files["config"], preprocessor=pre, start_n_top=2, end_n_top=2)
    out = v2(inputs)
    assert out["start_top_index"].shape == (2, 2) and out["end_top_index"].shape == (2, 4)


def test_from_pretrained_with_a_preprocessor(model_files, tmp_path):
    config = model_files["config"]
    trained = AlbertClassifier(config, num_labels=2)
    release = tmp_path / "release"
    save_tf1_checkpoint(trained, str(release / "model.ckpt-best"))
    config.to_json_file(str(release / "albert_config.json"))
    shutil.copy(model_files["spm"], str(release / "30k-clean.model"))

    pre = AlbertPreprocessor.from_pretrained(str(release))
    assert pre.max_seq_length == config.max_position_embeddings   # min(512, the model's positions)
    with open(model_files["spm"], "rb") as f:
        assert pre.spm_model_proto == f.read()
    model = AlbertClassifier.from_pretrained(str(release), num_labels=2, preprocessor={"max_seq_length": MAX_SEQ})
    assert model.preprocessor.max_seq_length == MAX_SEQ
    texts = ["the movie was good .", "a bad film ."]
    features = model.preprocessor(texts)
    np.testing.assert_allclose(model.predict(texts, verbose=0)["probabilities"],
                               trained(features, training=False)["probabilities"].numpy(), rtol=1e-5, atol=1e-6)
    pretrainer = AlbertPretrainer.from_pretrained(str(release), preprocessor=True)   # Fresh MLM/SOP heads.
    assert pretrainer.preprocessor.max_seq_length == config.max_position_embeddings
    assert AlbertClassifier.from_pretrained(str(release), num_labels=2).preprocessor is None


def test_input_errors_are_clear(model_files, tmp_path):
    config = model_files["config"]
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX_SEQ)
    plain = AlbertClassifier(config, num_labels=2)
    with pytest.raises(InputError, match="raw text needs a preprocessor"):
        plain.predict(["the movie was good ."], verbose=0)
    with pytest.raises(InputError, match="raw text needs a preprocessor"):
        plain(tf.constant(["the movie was good ."]))
    model = AlbertClassifier(encoder=plain.encoder, num_labels=2, preprocessor=pre)
    with pytest.raises(InputError, match="tuple of two lists"):
        model.predict([("a", "b"), ("c", "d")], verbose=0)
    with pytest.raises(InputError, match="one entry per example"):
        model.fit(["a", "b", "c"], np.array([0, 1]), verbose=0)
    with pytest.raises(InputError, match="one entry per example"):
        model.predict((["a", "b"], ["c"]), verbose=0)
    with pytest.raises(InputError, match="must be strings"):
        pre(tf.constant([1, 2]))
    with pytest.raises(InputError, match="need `text_a`"):
        pre({"sentence": ["a"]})
    with pytest.raises(InputError, match="max_position_embeddings"):
        AlbertClassifier(config, preprocessor=AlbertPreprocessor(model_files["spm"], max_seq_length=128))
    with pytest.raises(InputError, match="must be an `albert_tf.AlbertPreprocessor`"):
        AlbertClassifier(config, preprocessor="spm.model")
    with pytest.raises(InputError, match="SentencePiece model not found"):
        AlbertPreprocessor(str(tmp_path / "missing.model"))
    race_model = AlbertRace(config, preprocessor=pre)
    inputs, _ = _race_inputs()
    inputs["options"] = [options[:3] for options in inputs["options"]]
    with pytest.raises(InputError, match="4 strings per question"):
        race_model.predict(inputs, verbose=0)
    with pytest.raises(InputError, match="set its learning rate there"):
        model.compile(optimizer=keras.optimizers.Adam(), learning_rate=1e-3)
    empty = tmp_path / "no_spm"
    save_tf1_checkpoint(plain, str(empty / "model.ckpt-best"))
    config.to_json_file(str(empty / "albert_config.json"))
    with pytest.raises(InputError, match="No SentencePiece model found"):
        AlbertPreprocessor.from_pretrained(str(empty))
