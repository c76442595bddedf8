"""The files that documentation code blocks declare with `<!-- test fixture: <name> -->` (docs/testing.md).

Each builder writes its files under a directory once per test session; `tests/test_docs.py` copies them into
the block's own working directory. The models are tiny (hidden 16, 2 layers) with seeded weights and a
SentencePiece model trained here, so a block runs in seconds and its answers are not a real model's.
"""

import os
import shutil
import tarfile

import sentencepiece as spm
import tensorflow as tf

from albert_tf.export import saved_model as export_lib
from albert_tf.checkpoints import convert, save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
import original_checkpoints as oc
import squad_fixtures as fx
from support.pipeline_models import built as _built

SEQ = 32   # max_seq_length of the fixture exports


def _common(root):
    """The SentencePiece model and config every fixture shares: (spm_file, config, config_file)."""
    spm_file = os.path.join(root, "common", "30k-clean.model")
    config_file = os.path.join(root, "common", "albert_config.json")
    if not os.path.exists(config_file):
        os.makedirs(os.path.dirname(spm_file), exist_ok=True)
        shutil.copy(fx.train_spm(os.path.dirname(spm_file)), spm_file)
        vocab_size = spm.SentencePieceProcessor(model_file=spm_file).get_piece_size()
        AlbertConfig(vocab_size=vocab_size, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=32,
                     max_position_embeddings=512).to_json_file(config_file)
    return spm_file, AlbertConfig.from_json_file(config_file), config_file


def _release(model, directory, spm_file, config_file):
    """Google's release layout: `model.ckpt-best` with TF1 names, `albert_config.json`, `30k-clean.model`."""
    os.makedirs(directory, exist_ok=True)
    save_tf1_checkpoint(model, os.path.join(directory, "model.ckpt-best"))
    shutil.copy(config_file, os.path.join(directory, "albert_config.json"))
    shutil.copy(spm_file, os.path.join(directory, "30k-clean.model"))


def tiny_release(root, out):
    """A pretrainer in Google's release layout three ways: `albert_base_v2.tar.gz`, which unpacks to
    `albert_base/` as Google's tarball does, that `albert_base/`, and `albert_base_v2/`, which stands in for
    the release name (a path that exists wins over a name)."""
    spm_file, config, config_file = _common(root)
    tf.keras.utils.set_random_seed(1)
    release = os.path.join(out, "albert_base")
    _release(_built(AlbertPretrainer(config), positions=True), release, spm_file, config_file)
    with tarfile.open(os.path.join(out, "albert_base_v2.tar.gz"), "w:gz") as archive:
        archive.add(release, arcname="albert_base")
    shutil.copytree(release, os.path.join(out, "albert_base_v2"))


def tiny_hf(root, out):
    """`albert-base-v2/` (transformers' AlbertForPreTraining) and `hf_sst2_model/` (2-label classifier)."""
    spm_file, config, config_file = _common(root)
    tf.keras.utils.set_random_seed(2)
    staging = os.path.join(root, "hf_staging")
    _release(_built(AlbertPretrainer(config), positions=True), os.path.join(staging, "pre"), spm_file, config_file)
    _release(_built(AlbertClassifier(config, num_labels=2)), os.path.join(staging, "clf"), spm_file, config_file)
    convert(os.path.join(staging, "pre"), os.path.join(out, "albert-base-v2"), output_format="hf")
    convert(os.path.join(staging, "clf"), os.path.join(out, "hf_sst2_model"), output_format="hf")


def tiny_run(root, out):
    """`my_run/model.ckpt-best` (our object-based pretraining checkpoint) and `albert_config.json`."""
    _, config, config_file = _common(root)
    tf.keras.utils.set_random_seed(3)
    oc.save_our_checkpoint(_built(AlbertPretrainer(config), positions=True),
                           os.path.join(out, "my_run", "model.ckpt-best"))
    shutil.copy(config_file, os.path.join(out, "albert_config.json"))


def tiny_finetuned(root, out):
    """`models/albert_mnli/` (an export of a 3-label classifier), `squad2_out/model.ckpt-best` (SQuAD 2.0, our
    checkpoint) and `albert_race_release/` (RACE, release layout)."""
    spm_file, config, config_file = _common(root)
    tf.keras.utils.set_random_seed(4)
    export_lib.export_saved_model(_built(AlbertClassifier(config, num_labels=3)),
                                  os.path.join(out, "models", "albert_mnli"), spm_model_file=spm_file,
                                  max_seq_length=SEQ)
    oc.save_our_checkpoint(_built(AlbertSquadV2(config)), os.path.join(out, "squad2_out", "model.ckpt-best"))
    _release(_built(AlbertRace(config), choices=True), os.path.join(out, "albert_race_release"), spm_file,
             config_file)


def tiny_ner(root, out):
    """`ner_out/` as `run_ner.py --export_dir=ner_out/export` leaves it: `model.ckpt-best` (our checkpoint of a
    token classifier with the tags O, B-LOC, B-PER, I-PER) with `albert_config.json` and `30k-clean.model`
    beside it, and `export/1/`."""
    spm_file, config, config_file = _common(root)
    tf.keras.utils.set_random_seed(5)
    model = _built(AlbertTokenClassifier(config, num_labels=4, labels=["O", "B-LOC", "B-PER", "I-PER"]))
    ner_out = os.path.join(out, "ner_out")
    oc.save_our_checkpoint(model, os.path.join(ner_out, "model.ckpt-best"))
    shutil.copy(config_file, os.path.join(ner_out, "albert_config.json"))
    shutil.copy(spm_file, os.path.join(ner_out, "30k-clean.model"))
    export_lib.export_saved_model(model, os.path.join(ner_out, "export"), spm_model_file=spm_file,
                                  max_seq_length=SEQ)


_TRANSFORMERS_TF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "references", "transformers_tf")


def tiny_tfalbert(root, out):
    """transformers 4.x `save_pretrained` directories (written by transformers' own TFAlbert classes, see
    tests/references/make_transformers_tf_references.py), each with its `spiece.model`: `tf_sentiment_model/`
    (`TFAlbertForSequenceClassification`, labels negative, neutral, positive), `tf_ner_model/`
    (`TFAlbertForTokenClassification`) and `tf_albert/` (`TFAlbertModel`)."""
    for name, target in (("TFAlbertForSequenceClassification", "tf_sentiment_model"),
                         ("TFAlbertForTokenClassification", "tf_ner_model"), ("TFAlbertModel", "tf_albert")):
        shutil.copytree(os.path.join(_TRANSFORMERS_TF, name), os.path.join(out, target))
        shutil.copy(os.path.join(_TRANSFORMERS_TF, "spiece.model"), os.path.join(out, target, "spiece.model"))


def tiny_keras_hub(root, out):
    """keras-hub's own presets (`save_to_preset`): `my_classifier/` (an `AlbertTextClassifier` with 3 classes and
    sequence length 64) and `my_backbone/` (its `AlbertBackbone` alone)."""
    import keras_hub  # Deferred: only this fixture needs it.

    spm_file, config, _ = _common(root)
    tf.keras.utils.set_random_seed(6)
    tokenizer = keras_hub.models.AlbertTokenizer(proto=spm_file)
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=2, num_heads=2, embedding_dim=8, hidden_dim=16,
        intermediate_dim=32, dropout=0.0, max_sequence_length=128)
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(tokenizer, sequence_length=64)
    keras_hub.models.AlbertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor).save_to_preset(
        os.path.join(out, "my_classifier"))
    backbone.save_to_preset(os.path.join(out, "my_backbone"))
    tokenizer.save_to_preset(os.path.join(out, "my_backbone"))


FIXTURES = {"tiny_release": tiny_release, "tiny_hf": tiny_hf, "tiny_run": tiny_run,
            "tiny_finetuned": tiny_finetuned, "tiny_ner": tiny_ner, "tiny_tfalbert": tiny_tfalbert,
            "tiny_keras_hub": tiny_keras_hub}
