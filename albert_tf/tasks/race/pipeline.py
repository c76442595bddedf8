"""Article, question and options in, choice out: the `"multiple-choice"` pipeline (`AlbertRace`, `run_race.py`'s model).

`{"article", "question", "options": [4 strings]}` -> `{"choice": int, "scores": [4]}`, packed by
`race.encode_example`.
"""

import numpy as np

from albert_tf import registry
from albert_tf.tasks.race.data import RACE_NUM_CHOICES
from albert_tf.errors import InputError
from albert_tf.pipelines import Pipeline
from albert_tf.tasks.race import data as race
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.options import option_defaults
from albert_tf.tasks.race.task import RaceOptions


@registry.register_pipeline
class MultipleChoicePipeline(Pipeline):
    """`"multiple-choice"`: which of 4 options answers a question on an article (RACE packing)."""

    task = "multiple-choice"
    model_class = AlbertRace
    required_heads = ("race",)
    defaults = option_defaults(RaceOptions, ("max_seq_length", "max_qa_length", "do_lower_case"))
    output_names = ("probabilities",)

    def _check(self, item, index):
        if not isinstance(item, dict) or not {"article", "question", "options"} <= set(item):
            raise InputError(f"Input {index} of 'multiple-choice' must be a dict with `article`, `question` and "
                             f"`options` (4 strings). Received: "
                             f"{sorted(item) if isinstance(item, dict) else type(item).__name__}.")
        options = item["options"]
        if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
            raise InputError(f"Input {index} of 'multiple-choice': `options` must be a list of "
                             f"{RACE_NUM_CHOICES} strings. Received: {options!r}.")
        obj = {"article": item["article"], "questions": [item["question"]], "options": [list(options)]}
        (example,) = race.examples_from_object(obj, f"input {index}", "middle", self.process_text,
                                               require_answers=False)
        return example

    def _encode(self, examples):
        if self.max_qa_length > self.max_seq_length - 3:
            raise InputError(f"`max_qa_length` must be <= `max_seq_length` - 3. Received: `max_qa_length="
                             f"{self.max_qa_length}`, `max_seq_length={self.max_seq_length}`.")
        rows = []
        for example in examples:
            ids, mask, segments, _ = race.encode_example(example, self.tokenizer, self.max_seq_length,
                                                         self.max_qa_length)
            rows.append({"input_ids": ids, "input_mask": mask, "segment_ids": segments})
        return rows, None

    def _decode(self, examples, state, outputs):
        return [{"choice": int(np.argmax(o["probabilities"])), "scores": [float(p) for p in o["probabilities"]]}
                for o in outputs]
