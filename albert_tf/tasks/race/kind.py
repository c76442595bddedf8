"""The `race` model kind: the `race` text mode of `albert_tf.AlbertPreprocessor` and the `serve_text` packing of
`AlbertRace` (a dict `article`, `question`, `options [batch, 4]` -> features `[batch, 4, max_seq_length]`, as RACE
`convert_single_example`: the question+option keeps its last `max_qa_length` tokens, the article is cut), how
`AlbertRace` is served, its checkpoint names and its registration."""

import tensorflow as tf

from albert_tf import registry
from albert_tf.checkpoints import table
from albert_tf.data import features
from albert_tf.errors import InputError
from albert_tf.config import TOKEN_INPUTS
from albert_tf.serving_spec import ServingSpec, string_specs
from albert_tf.tasks.race.data import RACE, RACE_NUM_CHOICES
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.text import modes, packing
from albert_tf.text.ops import keep_first, keep_last, pack_segments


def pack_race(context, endings, max_seq_length, max_qa_length, cls_id, sep_id):
    """RACE `convert_single_example` per choice: the ending keeps its last `max_qa_length` tokens, then the
    article is cut to `L - 3 - len(ending)`.

    Args:
        context, endings: ragged int32 `[rows, (n)]`, `[rows, (m)]` (one row per choice).
        max_seq_length: int, L.
        max_qa_length: int.
        cls_id, sep_id: int.

    Returns:
        dict of int32 `[rows, L]`: `input_ids`, `input_mask`, `segment_ids`.
    """
    ending = keep_last(endings, max_qa_length)
    context = keep_first(context, tf.maximum(max_seq_length - 3 - ending.row_lengths(), 0))
    packed = pack_segments(context, ending, max_seq_length, cls_id, sep_id, second_optional=False)
    packed.pop("p_mask")
    return packed


def race_endings(normalize, question, options):
    """The RACE endings as normalised strings: `question.replace("_", option)` if the question has a blank,
    else `question + " " + option` (as the original `race_utils`: both are `process_text`-ed, the result is
    not).

    Args:
        normalize: the tokenizer's `normalize` (`preprocess_text` as TF ops).
        question: tf.string `[batch]`.
        options: tf.string `[batch, choices]`.

    Returns:
        tf.string `[batch * choices]`, to be tokenized with `tokenize_normalized`.
    """
    choices = tf.shape(options)[1]
    question = tf.repeat(normalize(question), choices)                                    # [batch * c]
    options = normalize(tf.reshape(options, [-1]))                                        # [batch * c]
    parts = tf.strings.split(question, "_")                                               # [batch*c, (k)]
    is_last = tf.ragged.range(parts.row_lengths()) == tf.expand_dims(parts.row_lengths() - 1, 1)
    fill = tf.where(is_last.flat_values, "", tf.gather(options, parts.value_rowids()))
    cloze = tf.strings.reduce_join(parts.with_flat_values(tf.strings.join([parts.flat_values, fill])), axis=1)
    appended = tf.strings.join([question, options], separator=" ")
    return tf.where(tf.strings.regex_full_match(question, r"(?s).*_.*"), cloze, appended)


def pack_race_texts(pipeline, article, question, options, num_choices=RACE_NUM_CHOICES):
    """RACE `convert_single_example` by `pipeline` (an `albert_tf.text.ops.TextPipeline`): features
    `[batch, num_choices, L]` of (article, question, options).

    Args:
        pipeline: `TextPipeline`.
        article, question: tf.string `[batch]`.
        options: tf.string `[batch, num_choices]`.
        num_choices: int, options per question.
    """
    batch = tf.shape(article)[0]
    context = tf.gather(pipeline.tokenize(article), tf.repeat(tf.range(batch), num_choices))  # [batch*c, (n)]
    endings = race_endings(pipeline.tokenizer.normalize, question, options)
    packed = pack_race(context, tf.cast(pipeline.tokenizer.tokenize_normalized(endings), tf.int32),
                       pipeline.max_seq_length, pipeline.max_qa_length, pipeline.cls_id, pipeline.sep_id)
    return {name: tf.reshape(t, [-1, num_choices, pipeline.max_seq_length])               # [batch, c, L]
            for name, t in packed.items()}


def _validate(preprocessor, inputs):
    del preprocessor
    options = inputs["options"]
    if options.shape.rank != 2 or options.shape[1] not in (None, RACE_NUM_CHOICES):
        raise InputError(f"RACE `options` must be {RACE_NUM_CHOICES} strings per question, shape "
                         f"`[batch, {RACE_NUM_CHOICES}]`. Received shape {options.shape}.")
    modes.check_keys_same_batch(inputs, ("article", "question", "options"))


def _pack(preprocessor, inputs):
    return pack_race_texts(preprocessor.pipeline, modes.flat_strings("article", inputs["article"]),
                           modes.flat_strings("question", inputs["question"]),
                           modes.strings("options", inputs["options"]), RACE_NUM_CHOICES)


def _check(preprocessor):
    if preprocessor.max_qa_length > preprocessor.max_seq_length - 3:
        raise InputError(f"`max_qa_length={preprocessor.max_qa_length}` leaves no room in `max_seq_length="
                         f"{preprocessor.max_seq_length}`: need max_qa_length <= max_seq_length - 3.")


# The original's `--max_qa_length`; `[CLS] article [SEP] question+option [SEP]` needs it <= max_seq_length - 3.
MAX_QA_LENGTH = modes.Length("max_qa_length", 128, "The maximum number of tokens of question+option (the last "
                             "ones are kept).", room=3)
RACE_TEXT = modes.TextMode(name="race", keys=("article", "question", "options"),
                           layout="`article`, `question` and `options` (RACE)", validate=_validate, pack=_pack,
                           check=_check, lengths=(MAX_QA_LENGTH,))


class RaceSpec(ServingSpec):
    """`AlbertRace`: four choices per example, `[batch, 4, seq]` inputs; `serve_text` takes the article, the
    question and the four options."""

    pipeline_tasks = ("multiple-choice",)

    def token_specs(self):
        return {name: tf.TensorSpec([None, RACE_NUM_CHOICES, None], tf.int32, name=name) for name in TOKEN_INPUTS}

    def outputs(self, out, threshold):
        return {"logits": out["logits"], "probabilities": out["probabilities"], "predictions": out["predictions"]}

    def example_spec(self, max_seq_length, lengths):
        return features.parse_spec(features.select(RACE, TOKEN_INPUTS),
                                   choices_seq=max_seq_length * RACE_NUM_CHOICES)

    def example_features(self, parsed, max_seq_length):
        return {name: tf.reshape(tf.cast(parsed[name], tf.int32), [-1, RACE_NUM_CHOICES, max_seq_length])
                for name in TOKEN_INPUTS}, {}                                             # [batch, 4, seq]

    def text_specs(self):
        specs = string_specs(("article", "question"))
        specs["options"] = tf.TensorSpec([None, RACE_NUM_CHOICES], tf.string, name="options")
        return specs

    def text_features(self, pipeline, texts):
        return pack_race_texts(pipeline, texts["article"], texts["question"], texts["options"],
                                         RACE_NUM_CHOICES)                               # [batch, 4, L]

    def calibration_rows(self, fields, path, number, tokenizer, do_lower_case, shapes):
        """`article<TAB>question<TAB>option 1<TAB>...<TAB>option 4`, packed as `race.encode_example`."""
        from albert_tf.tasks.race import data as race  # Only for text calibration.

        if len(fields) != 2 + RACE_NUM_CHOICES:
            raise InputError(f"`{path}` line {number}: expected `article<TAB>question<TAB>` and "
                             f"{RACE_NUM_CHOICES} options for RACE calibration.")
        seq = shapes["input_ids"][-1]
        obj = {"article": fields[0], "questions": [fields[1]], "options": [fields[2:]]}

        def process(text):
            return packing.process_text(text, do_lower_case=do_lower_case)

        (example,) = race.examples_from_object(obj, f"line {number}", "middle", process, require_answers=False)
        ids, mask, segments, _ = race.encode_example(example, tokenizer, seq, min(128, seq - 3))
        return [{"input_ids": ids, "input_mask": mask, "segment_ids": segments}]


# `race_utils.create_model`: root-scope `output_weights [1, H]`, `output_bias [1]` (the names of the classifier
# head: a TF1 checkpoint with them reads as `classifier`, the lower `order`); transformers'
# `AlbertForMultipleChoice`.
HEAD = table.output_projection_head("race", "", "race_head", hf_module="classifier")
KIND = registry.register(registry.ModelKind(
    name="race", model_class=AlbertRace, heads=(HEAD,), serving_spec=RaceSpec(),
    hf_architecture="AlbertForMultipleChoice", order=5, text_mode=RACE_TEXT))
