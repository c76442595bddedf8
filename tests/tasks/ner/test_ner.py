"""Token classification (NER): conlleval metrics against seqeval, the CoNLL reader and windows, `run_ner.py`
end to end (train, evaluate, predict, export, `serve_text`), the Hugging Face round trip, the pipeline."""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from safetensors.numpy import load_file
from seqeval import metrics as seqeval_metrics

from albert_tf.checkpoints.convert import convert
from albert_tf.config import AlbertConfig
from albert_tf.tasks.ner import data as conll
from albert_tf.errors import InputError
from albert_tf.tasks.ner.model import AlbertTokenClassifier, token_classification_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.tasks.ner import conlleval
from fresh_process import same_cpu_backend
from foreign_fixtures import CONFIGS, hf_state_dict, keras_hub_from_hf, make_inputs, write_hf_dir
from repo_paths import REPO
from task_fixtures import write_conll



# --- metrics: conlleval as seqeval (its default mode is conlleval's) ----------------------------------------------


def assert_metrics_match_seqeval(gold, guessed):
    ours = conlleval.conll_metrics(gold, guessed)
    assert ours["precision"] == pytest.approx(seqeval_metrics.precision_score(gold, guessed), abs=1e-12)
    assert ours["recall"] == pytest.approx(seqeval_metrics.recall_score(gold, guessed), abs=1e-12)
    assert ours["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, guessed), abs=1e-12)
    assert ours["accuracy"] == pytest.approx(seqeval_metrics.accuracy_score(gold, guessed), abs=1e-12)
    report = seqeval_metrics.classification_report(gold, guessed, output_dict=True, zero_division=0)
    for kind, values in ours["per_type"].items():
        if kind in report:
            assert values["precision"] == pytest.approx(report[kind]["precision"], abs=1e-12), kind
            assert values["recall"] == pytest.approx(report[kind]["recall"], abs=1e-12), kind
            assert values["f1"] == pytest.approx(report[kind]["f1-score"], abs=1e-12), kind
            assert values["num_gold"] == report[kind]["support"], kind
        else:   # seqeval lists the gold types only: a type that is only guessed has no gold entity.
            assert values["num_gold"] == 0 and values["recall"] == 0.0
    return ours


IOB2 = ([["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-PER"]],
        [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"], ["B-ORG", "I-ORG", "O", "O", "B-LOC"]])
# IOB1: `I-` opens an entity; `B-` only between adjacent entities of one type.
IOB1 = ([["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-LOC"], ["O", "I-ORG", "O", "I-MISC", "B-MISC"]],
        [["I-PER", "I-PER", "I-PER", "O", "I-LOC", "I-LOC"], ["O", "I-ORG", "O", "I-MISC", "B-MISC"]])
# `I-` with no `B-`: after `O`, after another type, at a sentence start.
DANGLING = ([["O", "I-PER", "I-PER", "I-LOC", "O"], ["I-ORG", "B-ORG", "O"]],
            [["O", "B-PER", "I-PER", "B-LOC", "O"], ["I-ORG", "I-ORG", "O"]])


@pytest.mark.parametrize("case", [IOB2, IOB1, DANGLING], ids=["iob2", "iob1", "i_without_b"])
def test_metrics_equal_seqeval(case):
    assert_metrics_match_seqeval(*case)


def test_metrics_counts_written_out():
    # IOB1 gold: PER (0-1), PER (2), LOC (4-5); guessed: one PER (0-2), LOC (4-5). conlleval: 1 of 2 guessed
    # chunks correct, 1 of 3 gold chunks found.
    metrics = conlleval.conll_metrics(IOB1[0][:1], IOB1[1][:1])
    assert (metrics["per_type"]["PER"]["num_gold"], metrics["per_type"]["PER"]["num_guessed"],
            metrics["per_type"]["PER"]["num_correct"]) == (2, 1, 0)
    assert (metrics["precision"], metrics["recall"]) == (0.5, 1 / 3)
    assert metrics["accuracy"] == 5 / 6


def test_random_tag_sequences_equal_seqeval():
    rng = random.Random(7)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"]
    for _ in range(30):
        lengths = [rng.randint(1, 9) for _ in range(rng.randint(1, 4))]
        gold = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        guessed = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        assert_metrics_match_seqeval(gold, guessed)


class PieceTokenizer:
    """A transparent tokenizer: a word of n letters is n pieces (its letters), ids from a fixed table."""

    def __init__(self, words):
        letters = sorted({c for word in words for c in word.lower()})
        self.ids = {"[CLS]": 2, "[SEP]": 3, **{c: i + 10 for i, c in enumerate(letters)}}

    def tokenize(self, text):
        return list(text)

    def convert_tokens_to_ids(self, tokens):
        return [self.ids[token] for token in tokens]


def test_entity_broken_by_a_window_is_rejoined_and_counted_as_conlleval():
    # "ann lee" (PER) straddles the window boundary: max_seq_length 9 leaves 7 pieces per window.
    sentence = conll.Sentence(["ab", "cd", "ann", "lee", "xy", "z"], ["O", "O", "B-PER", "I-PER", "O", "B-LOC"],
                              None)
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    tokenizer = PieceTokenizer(sentence.words)
    windows = conll.convert_sentences([sentence], tokenizer, labels, 9, do_lower_case=True)
    assert [(w.first_word, w.num_words) for w in windows] == [(0, 3), (3, 3)]
    # Labels on each word's first piece only, the rest ignored.
    assert windows[0].label_ids == [-100, 0, -100, 0, -100, 1, -100, -100, -100]
    assert windows[1].input_ids == [2] + tokenizer.convert_tokens_to_ids(list("leexyz")) + [3]
    assert windows[1].label_ids == [-100, 2, -100, -100, 0, -100, 3, -100]
    # A tagger that lost the left context tags the second half `B-PER`: two PER chunks, neither correct.
    predictions = np.zeros([2, 9], np.int32)
    predictions[0, windows[0].first_pieces] = [0, 0, 1]
    predictions[1, windows[1].first_pieces] = [1, 0, 3]
    guessed = conll.word_predictions([sentence], windows, predictions, labels)
    assert guessed == [["O", "O", "B-PER", "B-PER", "O", "B-LOC"]]
    metrics = assert_metrics_match_seqeval([sentence.tags], guessed)
    assert (metrics["per_type"]["PER"]["num_correct"], metrics["per_type"]["LOC"]["num_correct"]) == (0, 1)
    # Gold tags back through the windows: every word covered once.
    gold_ids = np.zeros([2, 9], np.int32)
    for row, window in zip(gold_ids, windows):
        row[:len(window.label_ids)] = np.maximum(window.label_ids, 0)
    assert conll.word_predictions([sentence], windows, gold_ids, labels) == [sentence.tags]


def test_loss_ignores_unlabelled_positions():
    logits = np.random.default_rng(3).normal(size=[2, 4, 3]).astype(np.float32)
    labels = np.array([[-100, 2, -100, 0], [1, -100, -100, -100]])
    loss, count = token_classification_loss(tf.constant(logits), tf.constant(labels))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean([log_probs[0, 1, 2], log_probs[0, 3, 0], log_probs[1, 0, 1]])
    assert float(count) == 3 and float(loss) == pytest.approx(expected, rel=1e-5)


# --- the reader -----------------------------------------------------------------------------------------------


def test_reader_skips_docstart_and_reads_labels(tmp_path):
    (tmp_path / "train.txt").write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n\n\n"
                                        "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n")
    (tmp_path / "dev.txt").write_text("Peter NNP B-NP B-PER\n")
    sentences = conll.read_sentences(conll.split_path(str(tmp_path), "train"))
    assert [s.words for s in sentences] == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert [s.tags for s in sentences] == [["I-ORG", "O"], ["B-PER", "I-PER"]]
    assert sentences[0].lines == ["EU NNP B-NP I-ORG", "rejects VBZ B-VP O"]
    assert conll.labels_from_sentences(sentences) == ["O", "B-PER", "I-ORG", "I-PER"]
    assert conll.split_path(str(tmp_path), "dev").endswith("dev.txt")
    with pytest.raises(ValueError, match="valid.txt or dev.txt"):
        conll.split_path(str(tmp_path / "none"), "dev")
    (tmp_path / "bad.txt").write_text("EU I-ORG\nlonely\n")
    with pytest.raises(InputError, match=r"bad.txt:2: expected 2 columns \(as the first token line\), got 1: "
                                         r"'lonely'$"):
        conll.read_sentences(str(tmp_path / "bad.txt"))
    (tmp_path / "bad.txt").write_text("lonely\nEU I-ORG\n")
    with pytest.raises(InputError, match="bad.txt:1: expected `word POS chunk tag`"):
        conll.read_sentences(str(tmp_path / "bad.txt"))
    (tmp_path / "empty.txt").write_text("-DOCSTART- -X- -X- O\n\n")
    with pytest.raises(InputError, match="empty.txt:1: expected CoNLL token lines"):
        conll.read_sentences(str(tmp_path / "empty.txt"))
    with pytest.raises(ValueError, match="tags B-MISC are not in the label list"):
        conll.check_tags([conll.Sentence(["x"], ["B-MISC"], None)], ["O"], "dev.txt")
    assert conll.parse_labels("O, B-PER ,I-PER") == ["O", "B-PER", "I-PER"]
    with pytest.raises(ValueError, match="distinct tags"):
        conll.parse_labels("O,O")


def test_a_line_without_its_tag_is_refused(tmp_path):
    """Issue row: `call NN I-NP` (the tag missing) in a 4-column train.txt; the original takes the chunk column
    as the tag and the label set gains `I-NP`. Here it is one line naming the file and line."""
    (tmp_path / "train.txt").write_text("EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n"
                                        "call NN I-NP\n")
    with pytest.raises(InputError, match=r"train.txt:5: expected 4 columns \(as the first token line\), got 3: "
                                         r"'call NN I-NP'$"):
        conll.read_sentences(str(tmp_path / "train.txt"))


# --- end to end: run_ner.py ---------------------------------------------------------------------------------------

PEOPLE = ("alice", "bob", "carol", "dave", "erin")
SURNAMES = ("smith", "jones", "brown")
PLACES = ("paris", "london", "berlin", "rome", "oslo")
FILLER = ("the", "met", "in", "saw", "a", "visited", "and", "from", "today", "went", "to", "with", "old")


def make_sentences(seed, n, long_every=0):
    """Sentences whose tags follow from the words: people (B-PER, surname I-PER) and places (B-LOC)."""
    rng = random.Random(seed)
    sentences = []
    for i in range(n):
        words, tags = [], []
        for _ in range(rng.randint(3, 7) if not (long_every and i % long_every == 0) else 28):
            r = rng.random()
            if r < 0.25:
                words.append(rng.choice(PEOPLE).title())
                tags.append("B-PER")
                if rng.random() < 0.4:
                    words.append(rng.choice(SURNAMES).title())
                    tags.append("I-PER")
            elif r < 0.45:
                words.append(rng.choice(PLACES).title())
                tags.append("B-LOC")
            else:
                words.append(rng.choice(FILLER))
                tags.append("O")
        sentences.append((words, tags))
    return sentences


MAX_SEQ = 24


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ner")
    data = root / "data"
    data.mkdir()
    write_conll(data / "train.txt", make_sentences(1, 160, long_every=10))
    write_conll(data / "valid.txt", make_sentences(2, 30))
    write_conll(data / "test.txt", make_sentences(3, 30, long_every=15))
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(" ".join(w.lower() for w in words) for words, _ in make_sentences(4, 300)) + "\n")
    prefix = str(root / "ner_spm")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=prefix, vocab_size=60, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], character_coverage=1.0, model_type="unigram",
        hard_vocab_limit=False, minloglevel=2)
    vocab_size = spm.SentencePieceProcessor(model_file=prefix + ".model").get_piece_size()
    config = AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    config.to_json_file(str(root / "albert_config.json"))
    return {"root": root, "data": data, "spm": prefix + ".model", "config": str(root / "albert_config.json")}


def test_windows_hold_sentencepiece_pieces_with_labels_on_first_pieces(workdir):
    sp = spm.SentencePieceProcessor(model_file=workdir["spm"])
    tokenizer = FullTokenizer(spm_model_file=workdir["spm"])
    sentences = conll.read_sentences(str(workdir["data"] / "train.txt"))
    labels = conll.labels_from_sentences(sentences)
    assert labels == ["O", "B-LOC", "B-PER", "I-PER"]
    windows = conll.convert_sentences(sentences, tokenizer, labels, MAX_SEQ)
    covered = {}
    for window in windows:
        sentence = sentences[window.sentence]
        words = sentence.words[window.first_word:window.first_word + window.num_words]
        pieces = [sp.encode(word.lower()) for word in words]        # the words are ASCII letters only
        assert window.input_ids == [sp.piece_to_id("[CLS]")] + sum(pieces, []) + [sp.piece_to_id("[SEP]")]
        assert len(window.input_ids) <= MAX_SEQ
        starts = list(np.cumsum([0] + [len(p) for p in pieces[:-1]]) + 1)
        assert window.first_pieces == starts
        expected = [-100] * len(window.input_ids)
        for start, tag in zip(starts, sentence.tags[window.first_word:]):
            expected[start] = labels.index(tag)
        assert window.label_ids == expected
        covered.setdefault(window.sentence, []).extend(range(window.first_word, window.first_word + window.num_words))
    assert all(covered[i] == list(range(len(s.words))) for i, s in enumerate(sentences))
    assert len(windows) > len(sentences)     # the long sentences are split


@pytest.fixture(scope="module")
def trained(workdir):
    out, export = workdir["root"] / "out", workdir["root"] / "export"
    args = [f"--data_dir={workdir['data']}", f"--albert_config_file={workdir['config']}",
            f"--spm_model_file={workdir['spm']}", f"--output_dir={out}", "--do_train", "--do_eval", "--do_predict",
            f"--max_seq_length={MAX_SEQ}", "--train_batch_size=16", "--eval_batch_size=16", "--learning_rate=3e-3",
            "--train_step=150", "--warmup_step=15", "--save_checkpoints_steps=75", "--iterations_per_loop=25",
            "--random_seed=1", f"--export_dir={export}"]
    # The export's tags are compared with the runner's predictions in this process: the same CPU kernels in both.
    proc = subprocess.run([sys.executable, os.path.join(REPO, "run_ner.py")] + args, cwd=REPO, capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO,
                                              **same_cpu_backend()), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, export


def _results(path):
    return dict(line.split(" = ") for line in open(path).read().splitlines() if " = " in line)


@pytest.mark.e2e
def test_cli_trains_evaluates_predicts_and_exports(trained, workdir):
    out, export = trained
    results = _results(out / "eval_results.txt")
    assert float(results["eval_f1"]) >= 0.9, results
    assert {"eval_precision", "eval_recall", "eval_accuracy", "eval_PER_f1", "eval_LOC_f1"} <= set(results)
    assert os.path.exists(out / "model.ckpt-best.index") and os.path.exists(out / "best_trial.txt")
    # predictions.txt: the test file's lines (without -DOCSTART-) with the predicted tag as a last column.
    test_lines = [line for line in open(workdir["data"] / "test.txt").read().splitlines()[2:]]
    predicted = open(out / "predictions.txt").read().splitlines()
    assert len(predicted) == len(test_lines)
    assert [" ".join(p.split()[:-1]) for p in predicted] == test_lines
    sentences = [[]]
    for line in predicted:
        if line:
            sentences[-1].append(line.split())
        else:
            sentences.append([])
    sentences = [s for s in sentences if s]
    gold, guessed = [[t[3] for t in s] for s in sentences], [[t[4] for t in s] for s in sentences]
    assert float(_results(out / "predict_results.txt")["eval_f1"]) == pytest.approx(
        seqeval_metrics.f1_score(gold, guessed), abs=1e-9)

    # The SavedModel's serve_text: the same tag per word as predictions.txt (sentences in one window).
    import tensorflow_text  # noqa: F401  (the ops of serve_text)
    version = os.path.join(export, sorted(os.listdir(export))[-1])
    serve = tf.saved_model.load(version).signatures["serve_text"]
    short = [s for s in sentences if sum(len(spm.SentencePieceProcessor(model_file=workdir["spm"]).encode(t[0].lower()))
                                         for t in s) <= MAX_SEQ - 2]
    assert len(short) >= len(sentences) - 2
    got = serve(text=tf.constant([" ".join(t[0] for t in s) for s in short]))
    tags = got["tags"].numpy()
    for row, sentence in zip(tags, short):
        assert [t.decode() for t in row[:len(sentence)]] == [t[4] for t in sentence]
        assert all(t == b"" for t in row[len(sentence):])
    assert got["scores"].numpy().max() <= 1.0


@pytest.mark.e2e
def test_pipeline_tags_words_from_the_export_and_the_checkpoint(trained, workdir):
    from albert_tf.tasks.ner.pipeline import token_classification_pipeline
    out, export = trained
    labels = ["O", "B-LOC", "B-PER", "I-PER"]
    text = "Alice  Smith visited Paris and Bob"
    for source in (str(export), str(out / "model.ckpt-best")):
        pipe = token_classification_pipeline(source, labels=labels, max_seq_length=MAX_SEQ,
                                             config=workdir["config"], spm_model_file=workdir["spm"])
        words = pipe(text, aggregation="none")
        assert [w["word"] for w in words] == ["Alice", "Smith", "Paris", "Bob"]
        assert [w["entity"] for w in words] == ["B-PER", "I-PER", "B-LOC", "B-PER"]
        assert all(text[w["start"]:w["end"]] == w["word"] and 0 < w["score"] <= 1 for w in words)
        entities = pipe([text], aggregation="simple")[0]
        assert [(e["word"], e["entity"]) for e in entities] == [("Alice  Smith", "PER"), ("Paris", "LOC"),
                                                                 ("Bob", "PER")]
        assert entities[0]["score"] == pytest.approx((words[0]["score"] + words[1]["score"]) / 2)


_FLAG_PROBE = r"""
import json, sys
from absl import flags
from albert_tf import commands
from albert_tf.commands import flags as flag_lib
command = commands.find("run_ner")
FLAGS = flags.FLAGS
flag_lib.define_flags(command.options, no_flag=command.no_flag, only=command.only, module_name="run_ner")
names = sorted(field.name for _, field in flag_lib.declared_fields(command.options, command.no_flag, command.only))
argv, given = ["run_ner"], {}
for name in names:
    flag = FLAGS[name]
    if flag.flag_type() == "bool":
        given[name] = not flag.default
        argv.append(("--" if given[name] else "--no") + name)
        continue
    if hasattr(flag.parser, "enum_values"):
        given[name] = [v for v in flag.parser.enum_values if v != flag.default][0]
    elif flag.flag_type() == "int":
        given[name] = (flag.default or 0) + 7
    elif flag.flag_type() == "float":
        given[name] = 0.375
    elif isinstance(flag.parser, flags.ListParser):
        given[name] = ["value_of_" + name, "and_more"]
        argv.append(f"--{name}={','.join(given[name])}")
        continue
    else:
        given[name] = "value_of_" + name
    argv.append(f"--{name}={given[name]}")
FLAGS(argv)
built = flag_lib.from_flags(FLAGS, *command.options)
set_to = {name: next(getattr(b, name) for b in built if hasattr(b, name)) for name in names}
print(json.dumps({"given": given, "set_to": set_to, "task": type(built[0]).__name__}))
"""


@pytest.mark.e2e
def test_every_run_ner_flag_sets_the_option_field_of_its_name():
    proc = subprocess.run([sys.executable, "-c", _FLAG_PROBE], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["task"] == "NerOptions"
    assert result["set_to"] == result["given"]
    # The runners' shared flags, and the task's own.
    assert {"data_dir", "albert_config_file", "spm_model_file", "vocab_file", "output_dir", "init_checkpoint",
            "albert_hub_module_handle", "do_lower_case", "max_seq_length", "do_train", "do_eval", "do_predict",
            "train_batch_size", "eval_batch_size", "predict_batch_size", "learning_rate",
            "save_checkpoints_steps", "iterations_per_loop", "export_dir", "use_tpu", "tpu_name", "strategy",
            "mixed_precision", "random_seed", "recompute", "gradient_accumulation_steps", "labels",
            "dropout_prob", "train_step", "warmup_step", "optimizer"} <= set(result["given"])


# --- Hugging Face AlbertForTokenClassification --------------------------------------------------------------------


def test_hf_token_classification_directory_loads_predicts_and_writes_back(tmp_path):
    config = CONFIGS["G1K1"]
    state, tf1 = hf_state_dict(config, np.random.default_rng(61), heads=())
    # transformers' AlbertForTokenClassification: no pooler, `classifier.weight [num_labels, H]`.
    pooler = {name: state.pop(name) for name in ("albert.pooler.weight", "albert.pooler.bias")}
    rng = np.random.default_rng(62)
    state["classifier.weight"] = rng.normal(scale=0.3, size=(5, config["hidden_size"])).astype(np.float32)
    state["classifier.bias"] = rng.normal(scale=0.3, size=(5,)).astype(np.float32)
    directory = write_hf_dir(str(tmp_path / "hf"), config, state, "AlbertForTokenClassification")
    # transformers' `id2label`, as a fine-tuned NER directory has it: the tag names come with the weights.
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    hf_json = json.load(open(os.path.join(directory, "config.json")))
    hf_json.update(id2label={str(i): tag for i, tag in enumerate(tags)},
                   label2id={tag: i for i, tag in enumerate(tags)})
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(hf_json, f)
    model = AlbertTokenClassifier.from_pretrained(directory)
    assert model.num_labels == 5 and model.labels == tags
    ids, mask, seg = make_inputs()
    inputs = {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask), "segment_ids": tf.constant(seg)}
    # The encoder as keras-hub's own transformers converter reads it (which needs a pooler: a twin directory
    # with one; the sequence output does not depend on it); the head as NumPy.
    backbone = keras_hub_from_hf(write_hf_dir(str(tmp_path / "kh"), config, dict(state, **pooler), "AlbertModel"))
    sequence = backbone({"token_ids": tf.constant(ids), "segment_ids": tf.constant(seg),
                         "padding_mask": tf.constant(mask)})["sequence_output"].numpy()
    logits = model(inputs, training=False)["logits"].numpy()
    np.testing.assert_allclose(logits, sequence @ state["classifier.weight"].T + state["classifier.bias"], atol=1e-4)
    # Written back with --format=hf: the same tensors under the same names, the same architecture.
    assert convert(directory, str(tmp_path / "back"), output_format="hf")["model"] == "AlbertTokenClassifier"
    written = load_file(str(tmp_path / "back" / "model.safetensors"))
    for name, value in state.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    hf_config = json.load(open(tmp_path / "back" / "config.json"))
    assert hf_config["architectures"] == ["AlbertForTokenClassification"]
    assert hf_config["id2label"] == hf_json["id2label"] and hf_config["label2id"] == hf_json["label2id"]
    # TF1 names: the head under its own scope.
    written_tf1 = convert(directory, str(tmp_path / "tf1"), output_format="tf1", model="token_classifier",
                          num_labels=5)["weights"]
    reader = tf.train.load_checkpoint(written_tf1)
    names = set(reader.get_variable_to_shape_map())
    assert {"token_classification/output_weights", "token_classification/output_bias"} <= names
    assert "output_weights" not in names
    np.testing.assert_array_equal(reader.get_tensor("token_classification/output_weights"),
                                  state["classifier.weight"])


def test_missing_files_and_unknown_tags_stop_before_any_work(workdir, tmp_path):
    from albert_tf.tasks.ner.task import run_ner
    data = tmp_path / "data"
    data.mkdir()
    write_conll(data / "train.txt", make_sentences(1, 5))
    common = dict(albert_config_file=workdir["config"], spm_model_file=workdir["spm"], max_seq_length=MAX_SEQ)
    with pytest.raises(ValueError, match="No valid.txt or dev.txt in `data_dir`"):
        run_ner(str(data), str(tmp_path / "out"), do_eval=True, **common)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="`labels` must be distinct tags"):
        run_ner(str(data), str(tmp_path / "out"), do_train=True, labels="O,O", **common)
    (data / "valid.txt").write_text("Paris NN I-NP B-MISC\n")
    with pytest.raises(ValueError, match="valid.txt: tags B-MISC are not in the label list"):
        run_ner(str(data), str(tmp_path / "out"), do_eval=True, **common)
