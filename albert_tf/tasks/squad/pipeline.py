"""Question and context in, answer span out: the `"question-answering"` pipeline (`AlbertSquadV1`, `AlbertSquadV2`).

`pipe(question=..., context=...)`, `{"question", "context"}` or a list of those -> `{"answer", "score", "start",
"end"}`, `context[start:end] == answer`, through `run_squad.py`'s doc-stride windows (`albert_tf.tasks.squad.data`)
and n-best decoding (`albert_tf.tasks.squad.postprocess`): the v1 span head, or the v2 beam head, which answers
"" when `null_score_diff_threshold` is given and the example's null score difference reaches it. `score` is the
answer's n-best probability (for "" the sigmoid of the null score difference).

An answer depends on its own input only: the v1 n-best lists rank the window's document positions (the runner's
files keep the original's lists over every position, padding included), an example whose best starts and ends
make no valid span is searched over all its positions, and the pieces align to the context character by
character of their normalised form, so `context[start:end] == answer` holds for ligatures, compatibility
characters ("ﬁ", "Ⅻ", "㎏") and combining marks too.
"""

import math

from absl import logging

from albert_tf.config import TOKEN_INPUTS
from albert_tf import registry
from albert_tf.checkpoints import open_reader
from albert_tf.checkpoints.convert import detect_model
from albert_tf.errors import InputError
from albert_tf.pipelines import KerasRunner, Pipeline
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad import postprocess as post
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.text import tokenization
from albert_tf.options import option_defaults
from albert_tf.tasks.squad.task import SquadV2Options


@registry.register_pipeline
class QuestionAnsweringPipeline(Pipeline):
    """`"question-answering"`: the answer span of a question in a context, through `run_squad.py`'s windows and
    n-best decoding (SQuAD 1.1 span head or the 2.0 beam head, whichever the source holds)."""

    task = "question-answering"
    model_class = AlbertSquadV1
    required_heads = ("squad_v1", "squad_v2")
    # run_squad_v2's defaults (v1 shares them; v2 adds the threshold and the beam sizes).
    defaults = option_defaults(SquadV2Options, ("max_seq_length", "doc_stride", "max_query_length", "do_lower_case",
                                                "n_best_size", "max_answer_length", "null_score_diff_threshold",
                                                "start_n_top", "end_n_top"))

    def __init__(self, runner, tokenizer, use_spm, **kwargs):
        if not use_spm:
            raise InputError("'question-answering' needs a SentencePiece model (the answer alignment works on "
                             "SentencePiece pieces); pass `spm_model_file=`.")
        super().__init__(runner, tokenizer, use_spm, **kwargs)
        squad.check_lengths(self.max_seq_length, self.max_query_length)
        if isinstance(runner, KerasRunner):
            self.v2 = isinstance(runner.model, AlbertSquadV2)
            if self.v2:
                self.start_n_top, self.end_n_top = runner.model.start_n_top, runner.model.end_n_top
        else:
            self.v2 = runner.kind == "squad_v2"
            if self.v2:
                # The beam sizes are fixed in the exported graph.
                self.start_n_top = int(runner.output_specs["start_top_index"].shape[-1])
                self.end_n_top = int(runner.output_specs["end_top_index"].shape[-1]) // self.start_n_top
        self.output_names = (("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                              "cls_logits") if self.v2 else ("start_logits", "end_logits"))

    @classmethod
    def build_model(cls, resolved, config, options):
        """The SQuAD 2.0 beam head when the source holds it (`start_n_top`, `end_n_top` from the options), else
        the 1.1 span head."""
        kind, _ = detect_model(open_reader(resolved))
        if kind == "squad_v2":
            return AlbertSquadV2(config, start_n_top=options.get("start_n_top", 5),
                                 end_n_top=options.get("end_n_top", 5))
        return AlbertSquadV1(config)

    def _inputs(self, inputs, kwargs):
        if kwargs:
            unknown = set(kwargs) - {"question", "context"}
            if unknown or inputs is not None:
                raise InputError("'question-answering' takes `question=` and `context=`, or one dict "
                                 f"`{{'question', 'context'}}` or a list of them. Received keywords: {sorted(kwargs)}.")
            return [dict(kwargs)], True
        return super()._inputs(inputs, {})

    def _check(self, item, index):
        if not isinstance(item, dict):
            raise InputError(f"Input {index} of 'question-answering' must be a dict with `question` and `context`. "
                             f"Received: {type(item).__name__}.")
        for key in ("question", "context"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise InputError(f"Input {index} of 'question-answering' needs a non-empty string `{key}`. "
                                 f"Received keys: {sorted(item)}.")
        return squad.SquadExample(qas_id=str(index), question_text=item["question"],
                                  paragraph_text=item["context"])

    def _encode(self, examples):
        for example in examples:
            pieces = len(self.tokenizer.tokenize(tokenization.preprocess_text(example.question_text,
                                                                              lower=self.do_lower_case)))
            if pieces > self.max_query_length:
                logging.warning("question-answering: question %s has %d tokens; only its first "
                                "`max_query_length=%d` are used (as the original).", example.qas_id, pieces,
                                self.max_query_length)
        features = []
        # Characters that normalise to several ("ﬁ", "㎏") align to the raw text (`expand_characters`).
        squad.convert_examples_to_features(examples, self.tokenizer, self.max_seq_length, self.doc_stride,
                                           self.max_query_length, False, features.append, self.do_lower_case,
                                           expand_characters=True)
        names = TOKEN_INPUTS + (("p_mask",) if self.v2 else ())
        return [{name: getattr(f, name) for name in names} for f in features], features

    def _decode(self, examples, features, outputs):
        results = []
        for feature, output in zip(features, outputs):
            if self.v2:
                results.append(post.RawResultV2(
                    unique_id=feature.unique_id,
                    start_top_log_probs=[float(x) for x in output["start_top_log_probs"]],
                    start_top_index=[int(x) for x in output["start_top_index"]],
                    end_top_log_probs=[float(x) for x in output["end_top_log_probs"]],
                    end_top_index=[int(x) for x in output["end_top_index"]],
                    cls_logits=float(output["cls_logits"])))
            else:
                results.append(post.RawResult(unique_id=feature.unique_id,
                                              start_log_prob=_own_positions(feature, output["start_logits"]),
                                              end_log_prob=_own_positions(feature, output["end_logits"])))
        result_dict = {}
        if self.v2:
            cls_dict = {}
            post.accumulate_predictions_v2(result_dict, cls_dict, examples, features, results, self.n_best_size,
                                           self.max_answer_length, self.start_n_top, self.end_n_top)
            predictions, score_diffs, nbest = post.write_predictions_v2(
                result_dict, cls_dict, examples, features, results, self.n_best_size,
                null_score_diff_threshold=self.null_score_diff_threshold)
        else:
            post.accumulate_predictions_v1(result_dict, examples, features, results, self.n_best_size,
                                           self.max_answer_length)
            self._every_span(result_dict, examples, features, results)
            predictions, nbest = post.write_predictions_v1(result_dict, examples, features, results,
                                                           self.n_best_size)
            score_diffs = None
        by_example = {}
        for feature in features:
            by_example.setdefault(feature.example_index, []).append(feature)
        answers = []
        for example_index, example in enumerate(examples):
            answer = predictions[example.qas_id]
            if self.v2 and answer == "" and self.null_score_diff_threshold is not None:
                diff = score_diffs[example.qas_id]
                answers.append({"answer": "", "score": 1.0 / (1.0 + math.exp(-diff)), "start": 0, "end": 0})
                continue
            start, end = self._offsets(result_dict, example_index, example, by_example.get(example_index, []),
                                       answer)
            answers.append({"answer": answer, "score": float(nbest[example.qas_id][0]["probability"]),
                            "start": start, "end": end})
        return answers

    def _every_span(self, result_dict, examples, features, results):
        """For an example whose `n_best_size` best starts and ends make no valid span (every best end before
        every best start), the candidates of all its positions: a context that holds a span answers one."""
        empty = {index for index, spans in result_dict.items() if not any(spans.values())}
        if not empty:
            return
        chosen = [(f, r) for f, r in zip(features, results) if f.example_index in empty]
        if not chosen:   # Examples without windows (their pieces did not align): nothing to search.
            return
        empty = {f.example_index for f, _ in chosen}
        every = {}
        post.accumulate_predictions_v1(every, examples, [f for f, _ in chosen], [r for _, r in chosen],
                                       max(len(r.start_log_prob) for _, r in chosen), self.max_answer_length)
        for index in empty:
            result_dict[index] = every[index]

    @staticmethod
    def _offsets(result_dict, example_index, example, features, answer):
        """Character offsets `[start, end)` in the context of the best span whose text is `answer`: the n-best
        decoding's first candidate (`squad_postprocess`), with the whitespace that decoding strips left out."""
        if not features:
            return 0, 0
        for pred in post.prelim_predictions(result_dict, example_index, features):
            feature = features[pred.feature_index]
            start = feature.tok_start_to_orig_index[pred.start_index]
            end = feature.tok_end_to_orig_index[pred.end_index] + 1
            raw = example.paragraph_text[start:end]
            if raw.strip() == answer:
                start += len(raw) - len(raw.lstrip())
                return start, start + len(answer)
        return 0, 0   # The decoding's placeholder ("empty" / "") for an example without a valid span.


def _own_positions(feature, logits):
    """A window's logits with every position outside its document pieces at -inf: the n-best lists then rank
    the input's own positions only, whatever padding its batch adds (the runner keeps the original's lists
    over all `max_seq_length` positions)."""
    doc_offset = feature.tokens.index("[SEP]") + 1
    doc_end = doc_offset + len(feature.tok_start_to_orig_index)
    return [float(x) if doc_offset <= i < doc_end else -math.inf for i, x in enumerate(logits)]
