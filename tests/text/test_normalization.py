"""`albert_tf.text.normalization`: plain SentencePiece with a release's model whose normalization rules carry the
original's `preprocess_text` gives the original tokenizer's ids on raw text (a large mixed corpus), on every line
but those where what no rule can express fires: the digit-comma split and, lower-cased, the final sigma."""

import os
import subprocess
import sys

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

import normalization_corpus as corpus
from fixtures_text import number_lines
from albert_tf.errors import InputError
from albert_tf.text import normalization
from albert_tf.text.vocab import train_sentencepiece
import repo_paths

NUM_LINES = 6000
REPO = os.path.dirname(repo_paths.REPO)


@pytest.fixture(scope="module")
def spm_models(tmp_path_factory):
    """`{do_lower_case: model path}`: 1000-piece models (the original's spm_train flags) trained on another draw
    of the corpus, preprocessed as the original does, with numbers written as encyclopaedic text is."""
    root = tmp_path_factory.mktemp("normalization")
    models = {}
    for lower in (True, False):
        text = root / f"corpus_{lower}.txt"
        lines = corpus.mixed_corpus(3000, seed=1) + number_lines(1000)
        text.write_text("\n".join(corpus.original_preprocess_text(line, lower) for line in lines) + "\n",
                        encoding="utf-8")
        models[lower] = train_sentencepiece(str(text), str(root / f"spm_{lower}"), vocab_size=1000, minloglevel=2)
    return models


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_plain_sentencepiece_gives_the_original_ids_on_a_mixed_corpus(spm_models, do_lower_case):
    original = spm.SentencePieceProcessor(model_file=spm_models[do_lower_case])
    with open(spm_models[do_lower_case], "rb") as f:
        plain = spm.SentencePieceProcessor(model_proto=normalization.normalized_model(f.read(), do_lower_case))
    lines = corpus.mixed_corpus(NUM_LINES)
    digit_comma, final_sigma, other = [], [], []
    for line in lines:
        want, fired = corpus.original_ids(original, line, do_lower_case)
        if plain.EncodeAsIds(line) == want:
            continue
        if fired:
            digit_comma.append(line)
        elif do_lower_case and corpus.final_sigma_fires(corpus.original_preprocess_text(line, False)):
            final_sigma.append(line)
        else:
            other.append(line)
    fired_lines = sum(corpus.original_ids(original, line, do_lower_case)[1] for line in lines)
    print(f"{'uncased' if do_lower_case else 'cased'}: {len(lines)} lines, ids differ on {len(digit_comma)} where "
          f"the digit-comma rule fires (it fires on {fired_lines}), {len(final_sigma)} with a final sigma, "
          f"{len(other)} others")
    assert other == [], other[:5]
    assert len(digit_comma) > 100 and len(digit_comma) <= fired_lines
    assert (len(final_sigma) > 0) == do_lower_case
    assert len(digit_comma) + len(final_sigma) < 0.15 * len(lines)


def test_the_model_keeps_its_pieces_and_flags():
    base = sentencepiece_model_pb2.ModelProto()
    base.pieces.add(piece="<unk>", score=0.0, type=sentencepiece_model_pb2.ModelProto.SentencePiece.UNKNOWN)
    base.pieces.add(piece="▁cafe", score=-1.5)
    base.normalizer_spec.name = "nmt_nfkc"
    base.normalizer_spec.add_dummy_prefix = False
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(normalization.normalized_model(base.SerializeToString()))
    assert model.normalizer_spec.name == "user_defined" and not model.normalizer_spec.add_dummy_prefix
    assert [(p.piece, p.score) for p in model.pieces] == [("<unk>", 0.0), ("▁cafe", -1.5)]
    assert model.normalizer_spec.precompiled_charsmap


def test_rules_spell_out_the_preprocessing():
    rules = dict(normalization.normalization_rules(True))
    assert rules["É"] == "e" and rules["\u00a0"] == " " and rules["\u0301"] == "" and rules["ﬁ"] == "fi"
    assert "a" not in rules and "é" in rules
    cased = dict(normalization.normalization_rules(False))
    assert cased["É"] == "E" and "A" not in cased


def test_a_file_that_is_not_a_model_is_named():
    with pytest.raises(InputError, match="`broken.model` is not a SentencePiece model"):
        normalization.normalized_model(b"\x08\x96\x01garbage", source="broken.model")


@pytest.mark.e2e
def test_albert_normalize_spm_writes_the_model(spm_models, tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    output = tmp_path / "raw-text.model"
    command = [sys.executable, "-m", "albert_tf.commands", "albert-normalize-spm",
               f"--spm_model_file={spm_models[True]}", f"--output={output}"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == str(output)
    with open(spm_models[True], "rb") as f:
        assert output.read_bytes() == normalization.normalized_model(f.read(), True)
    proc = subprocess.run(command[:-2] + [f"--spm_model_file={tmp_path / 'missing.model'}", f"--output={output}"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0 and "`spm_model_file` not found" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.e2e
def test_albert_normalize_spm_never_writes_over_its_source_or_into_a_directory(spm_models, tmp_path):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    source = tmp_path / "30k-clean.model"
    source.write_bytes(open(spm_models[True], "rb").read())
    before = source.read_bytes()
    for output, expected in ((source, "is `spm_model_file` itself"), (tmp_path, "is a directory")):
        proc = subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-normalize-spm",
                               f"--spm_model_file={source}", f"--output={output}"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert expected in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
    assert source.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["30k-clean.model"]
