"""Text in, labels out: the `"text-classification"` pipeline (`AlbertClassifier`, `run_classifier.py`'s model).

A string, a `(text_a, text_b)` pair or `{"text_a", "text_b"}` -> `{"label", "score", "scores"}`, packed by
`glue.convert_single_example`; labels from `labels=[...]`, else the GLUE task's list with `task_name=` (the
original's order), else `LABEL_<i>`. A regression head (STS-B, one label) gives `{"score": value}`.
"""

import numpy as np

from albert_tf import registry
from albert_tf.checkpoints import hf, source_num_labels
from albert_tf.errors import InputError
from albert_tf.pipelines import KerasRunner, Pipeline
from albert_tf.tasks.glue import data as glue
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.options import option_defaults
from albert_tf.tasks.glue.task import ClassifierOptions


@registry.register_pipeline
class TextClassificationPipeline(Pipeline):
    """`"text-classification"`: the classifier head's label and probabilities (or its value for regression)."""

    task = "text-classification"
    model_class = AlbertClassifier
    required_heads = ("classifier",)
    defaults = dict(option_defaults(ClassifierOptions, ("max_seq_length", "do_lower_case")), labels=None,
                    task_name=None)
    output_names = ("probabilities",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        labels = self.labels
        if labels is None and self.task_name is None and isinstance(self.runner, KerasRunner):
            labels = self.runner.model.labels   # A Hugging Face directory's `id2label`, when it names them.
        self.labels = resolve_labels(labels, self.task_name, self.runner_num_labels())

    def runner_num_labels(self):
        runner = self.runner
        if isinstance(runner, KerasRunner):
            return runner.model.num_labels
        return int(runner.output_specs["probabilities"].shape[-1])

    def _check(self, item, index):
        return self._text_pair(item, index)

    def _encode(self, items):
        return [self._pack(index, a, b) for index, (a, b) in enumerate(items)], None

    def _decode(self, items, state, outputs):
        results = []
        for output in outputs:
            probabilities = np.reshape(output["probabilities"], [-1])
            if self.labels == [None]:
                results.append({"score": float(probabilities[0])})
                continue
            best = int(np.argmax(probabilities))
            results.append({"label": self.labels[best], "score": float(probabilities[best]),
                            "scores": [float(p) for p in probabilities]})
        return results


    @classmethod
    def build_model(cls, resolved, config, options):
        """An `AlbertClassifier` with as many labels as the source's classifier head (`output_weights`)."""
        source = resolved.path
        num_labels = source_num_labels(resolved.checkpoint_prefix)
        if num_labels is None:
            raise InputError(f"Source `{source}` has no classifier head (`output_weights`): 'text-classification' "
                             "needs a fine-tuned classifier (e.g. a run_classifier.py `model.ckpt-best`).")
        wanted = options.get("labels")
        if wanted is not None and len(list(wanted)) != num_labels:
            raise InputError(f"`labels` has {len(list(wanted))} names but the classifier head of `{source}` has "
                             f"{num_labels} outputs.")
        labels = hf.labels_of(resolved.directory, num_labels) if resolved.layout == "hf_model" else None
        return AlbertClassifier(config, num_labels=num_labels, labels=labels)

    @classmethod
    def runner_options(cls, runner, options):
        """The labels a LiteRT export records (`albert_lite.json`), unless given."""
        labels = getattr(runner, "labels", None)
        if labels:
            options.setdefault("labels", labels)


def resolve_labels(labels, task_name, num_labels):
    """The label names of a classifier with `num_labels` outputs: `labels`, else the GLUE task's list (`[None]`
    for STS-B), else `LABEL_<i>` (`[None]` for a one-output regression head)."""
    if labels is not None:
        labels = list(labels)
        if len(labels) != num_labels:
            raise InputError(f"`labels` has {len(labels)} names but the classifier head has {num_labels} outputs.")
        return labels
    if task_name is not None:
        labels = glue.get_processor(task_name).get_labels()
        if len(labels) != num_labels:
            raise InputError(f"Task {task_name!r} has {len(labels)} labels {labels} but the classifier head has "
                             f"{num_labels} outputs.")
        return labels
    return [None] if num_labels == 1 else [f"LABEL_{i}" for i in range(num_labels)]
