"""Text in, tags out: the `"token-classification"` pipeline (`AlbertTokenClassifier`, `run_ner.py`'s model).

`token_classification_pipeline(source, **options)` loads the model and tokenizer of `source` (anything
`from_pretrained` reads, one of `run_ner.py`'s checkpoints, or an `albert-export` directory of a token
classifier) and returns a callable: a text (whitespace-separated words), or a list of texts, in; per text a
list of entities out, as transformers' token-classification pipeline gives them:

* `aggregation="none"` (default): one `{"word", "entity", "score", "start", "end", "index"}` per word whose tag
  is not `O` (`entity` is the tag, `score` its probability, `index` the word's place in the text);
* `aggregation="simple"`: consecutive words of one entity merged as transformers' `"simple"` strategy does
  (a `B-`/`S-` tag, another type or an `O` ends the entity; an `I-` after `O` opens one):
  `{"word": text[start:end], "entity": type, "score": mean of the words' scores, "start", "end"}`.

The words are packed as `run_ner.py` packs them (`albert_tf.tasks.ner.data`: each word's pieces, the tag read at
its first piece, long texts in windows of whole words), so the pipeline tags what `predictions.txt` tags.
Options: `max_seq_length` (128), `do_lower_case` (True), `labels` (the tag names; default: the model's, which
for a checkpoint are `LABEL_<i>` unless given), `aggregation`, and the shared `batch_size`, `progress`,
`config`, `spm_model_file`, `vocab_file`.
"""

import re

import numpy as np

from albert_tf.config import TOKEN_INPUTS
from albert_tf import pipelines, registry
from albert_tf.checkpoints import hf, open_reader, resolve_source, restore_source
from albert_tf.checkpoints.convert import describe_heads, detect_model
from albert_tf.tasks.ner import data as conll
from albert_tf.errors import InputError
from albert_tf.models.albert_model import as_config
from albert_tf.tasks.ner.model import HEAD_NAME, AlbertTokenClassifier
from albert_tf.options import option_defaults
from albert_tf.tasks.ner.task import NerOptions

AGGREGATIONS = ("none", "simple")


@registry.register_pipeline
class TokenClassificationPipeline(pipelines.Pipeline):
    """`"token-classification"`: a tag per word, or entities (`aggregation="simple"`)."""

    task = "token-classification"
    model_class = AlbertTokenClassifier
    required_heads = (HEAD_NAME,)
    defaults = dict(option_defaults(NerOptions, ("max_seq_length", "do_lower_case")), labels=None, aggregation="none")
    output_names = ("probabilities",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.aggregation = check_aggregation(self.aggregation)
        num_labels = int(self.runner.model.num_labels if hasattr(self.runner, "model")
                         else self.runner.output_specs["probabilities"].shape[-1])
        if self.labels is None:
            self.labels = list(getattr(getattr(self.runner, "model", None), "labels", None)
                               or [f"LABEL_{i}" for i in range(num_labels)])
        self.labels = conll.parse_labels(self.labels)
        if len(self.labels) != num_labels:
            raise InputError(f"`labels` has {len(self.labels)} names but the model tags {num_labels} labels.")

    @classmethod
    def load(cls, source, **options):
        """`token_classification_pipeline(source, **options)`: its own loading (words, tags, labels)."""
        return token_classification_pipeline(source, **options)

    def __call__(self, inputs=None, aggregation=None, **kwargs):
        previous = self.aggregation
        self.aggregation = check_aggregation(aggregation) if aggregation is not None else previous
        try:
            return super().__call__(inputs, **kwargs)
        finally:
            self.aggregation = previous

    def _check(self, item, index):
        if not isinstance(item, str):
            raise InputError(f"Input {index} of {self.task!r} must be a string. Received: {type(item).__name__}.")
        return item, [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", item)]

    def _encode(self, items):
        rows, windows = [], []
        for index, (_, words) in enumerate(items):
            sentence = conll.Sentence([word for word, _, _ in words], None, None)
            windows.extend(conll.sentence_windows(index, sentence, self.tokenizer, {}, self.max_seq_length,
                                                  self.do_lower_case) if words else [])
        arrays = conll.window_arrays(windows, self.max_seq_length)
        for i in range(len(windows)):
            rows.append({name: arrays[name][i] for name in TOKEN_INPUTS})
        return rows, windows

    def _decode(self, items, windows, outputs):
        words = [[None] * len(item[1]) for item in items]
        for window, output in zip(windows, outputs):
            for offset, position in enumerate(window.first_pieces):
                if position is None:
                    continue    # A word with no piece (combining marks only): tagged `O`, as run_ner.py.
                probabilities = output["probabilities"][position]
                best = int(np.argmax(probabilities))
                words[window.sentence][window.first_word + offset] = (self.labels[best], float(probabilities[best]))
        results = []
        for (text, spans), tags in zip(items, words):
            tagged = [{"word": word, "entity": tag[0], "score": tag[1], "start": start, "end": end, "index": i}
                      for i, ((word, start, end), tag) in enumerate(zip(spans, tags))
                      if tag is not None and tag[0] != "O"]
            results.append(group_entities(text, tagged) if self.aggregation == "simple" else tagged)
        return results


def check_aggregation(aggregation):
    if aggregation not in AGGREGATIONS:
        raise InputError(f"`aggregation` must be one of {', '.join(AGGREGATIONS)}. Received: {aggregation!r}.")
    return aggregation


def group_entities(text, tagged):
    """transformers' `"simple"` aggregation of tagged words (`O` words left out, in order) into entities."""
    entities = []
    for word in tagged:
        prefix, _, kind = word["entity"].partition("-") if "-" in word["entity"] else ("", "", word["entity"])
        last = entities[-1] if entities else None
        if (last is not None and prefix not in ("B", "S") and last["entity"] == kind
                and last["_last_index"] == word["index"] - 1):
            last["end"], last["_last_index"] = word["end"], word["index"]
            last["_scores"].append(word["score"])
        else:
            entities.append({"entity": kind, "start": word["start"], "end": word["end"], "_scores": [word["score"]],
                             "_last_index": word["index"]})
    return [{"word": text[e["start"]:e["end"]], "entity": e["entity"], "score": float(np.mean(e["_scores"])),
             "start": e["start"], "end": e["end"]} for e in entities]


def token_classification_pipeline(source, **options):
    """The `"token-classification"` pipeline of `source` (see the module docstring for the options).

    Raises:
        InputError: an unknown option, or a source without a token-classification head.
    """
    options, config, spm_model_file, vocab_file, do_lower_case = pipelines.split_options(options)
    export_dir = pipelines.export_directory(source)
    if export_dir is not None:
        runner = pipelines.ExportRunner(export_dir, options.pop("export_task", None))
        if runner.kind not in TokenClassificationPipeline.export_kinds:
            raise InputError(f"The export `{export_dir}` serves a {runner.kind} model; 'token-classification' needs "
                             "an export of token_classifier (per-token `probabilities [batch, seq, labels]`).")
        options.setdefault("do_lower_case", runner.do_lower_case)
        pipelines.default_lengths(TokenClassificationPipeline, options,
                                  runner.max_seq_length or runner.config.max_position_embeddings)
        tokenizer, use_spm = pipelines.make_tokenizer(spm_model_file or runner.spm_model_file, vocab_file,
                                                      options["do_lower_case"], export_dir)
        return TokenClassificationPipeline(runner, tokenizer, use_spm, **options)
    with resolve_source(source) as resolved:
        config = config if config is not None else resolved.config_file
        if config is None:
            raise InputError(f"No config for `{source}`: pass `config=`.")
        tokenizer, use_spm = pipelines.make_tokenizer(
            spm_model_file or resolved.spm_model_file,
            vocab_file or (None if resolved.spm_model_file else resolved.vocab_file), do_lower_case, source)
        kind, kwargs = detect_model(open_reader(resolved))
        if kind != "token_classifier":
            raise InputError(f"Source `{source}` has no token-classification head (`token_classification/"
                             f"output_weights`); it holds {describe_heads(resolved)}.")
        labels = options.get("labels")
        labels = conll.parse_labels(labels) if labels is not None else (
            hf.labels_of(resolved.directory, kwargs.get("num_labels")) if resolved.layout == "hf_model" else None)
        model = AlbertTokenClassifier(as_config(config), labels=labels, **kwargs)
        restore_source(model, resolved, allow_missing_heads=False)
    pipelines.default_lengths(TokenClassificationPipeline, options, model.config.max_position_embeddings)
    return TokenClassificationPipeline(pipelines.KerasRunner(model), tokenizer, use_spm, **options)
