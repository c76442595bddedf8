"""The accuracy cost of the CPU int8 routes on the fine-tuned goldens: albert_tf's LiteRT dynamic int8 (resizable
export, each batch at its own length) against ONNX Runtime's dynamic int8 (QInt8 weights) of the same weights.

The goldens (tests/references/finetuned_goldens.npz, tests/references/make_finetuned_references.py) are tiny
ALBERTs fine-tuned per head kind with held-out inputs and the original's float outputs; the decisions and
probabilities compared are those of tests/export/test_lite_goldens.py (`decisions`). For ONNX Runtime, each golden
is converted once by albert_tf's Hugging Face writer (`albert-convert --format=hf`), loaded by transformers
(`AlbertForSequenceClassification`, `...QuestionAnswering`, `...MultipleChoice`, `...TokenClassification`,
`...PreTraining`; SQuAD 2.0's head has no transformers class), exported by `torch.onnx.export`, optimized
(`onnxruntime.transformers.optimizer`) and quantized (`quantize_dynamic`, QInt8), as benchmarks/bench_cpu_peers.py
does. Prints one Markdown row per decision: decisions flipped against float and the largest probability change,
for each route; ONNX Runtime's float graph is checked against the goldens first.

Needs the `bench-cpu` extra and pytest (it reads the test's helpers)::

    python benchmarks/int8_goldens.py
"""

import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "export")]

HF_CLASSES = {"glue": "AlbertForSequenceClassification", "squad_v1": "AlbertForQuestionAnswering",
              "race": "AlbertForMultipleChoice", "ner": "AlbertForTokenClassification",
              "pretraining": "AlbertForPreTraining"}


def ort_outputs(task, release, work, inputs, quantized):
    """The golden's outputs (the names of the stored float outputs) from ONNX Runtime: float32 or dynamic int8."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    from albert_tf.checkpoints.convert import convert

    hf_dir = os.path.join(work, "hf")
    fp32, int8 = os.path.join(work, "fp32.onnx"), os.path.join(work, "int8.onnx")
    if not os.path.isfile(int8):
        convert(release, hf_dir, output_format="hf")
        model = getattr(transformers, HF_CLASSES[task]).from_pretrained(hf_dir, attn_implementation="eager").eval()
        shape = list(inputs["input_ids"].shape)
        ids = torch.ones(shape, dtype=torch.long)
        axes = {0: "batch", len(shape) - 1: "sequence"}
        raw = os.path.join(work, "model.onnx")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), raw, input_names=names,
                          dynamic_axes={name: axes for name in names}, opset_version=17, dynamo=False)
        optimized = optimizer.optimize_model(raw, model_type="bert", num_heads=model.config.num_attention_heads,
                                             hidden_size=model.config.hidden_size)
        optimized.save_model_to_file(fp32)
        quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(int8 if quantized else fp32, options, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": inputs["input_ids"], "attention_mask": inputs["input_mask"],
             "token_type_ids": inputs["segment_ids"]}
    wanted = {i.name for i in session.get_inputs()}
    raw_outputs = session.run(None, {k: np.asarray(v, np.int64) for k, v in feeds.items() if k in wanted})
    first = raw_outputs[0].astype(np.float64)
    if task == "squad_v1":
        return {"start_logits": first[..., 0] if first.ndim == 3 else first,
                "end_logits": raw_outputs[1].astype(np.float64)}
    if task == "pretraining":
        positions = inputs["masked_lm_positions"]
        mlm = np.take_along_axis(first, positions[:, :, None].astype(np.int64), axis=1)
        return {"mlm_logits": mlm, "sop_logits": raw_outputs[1].astype(np.float64)}
    return {"logits": first}


def main():
    import numpy as np
    import tensorflow as tf

    import test_lite_goldens as goldens
    from albert_tf.export import lite

    print("| golden | decision | LiteRT int8 (albert_tf) flipped | largest change | ONNX Runtime int8 flipped | "
          "largest change |")
    print("|---|---|---|---|---|---|")
    tf.get_logger().setLevel("ERROR")
    with tempfile.TemporaryDirectory(prefix="int8_goldens_") as root:
        for task, (cls, kwargs) in goldens.MODELS.items():
            release = os.path.join(root, task, "release")
            os.makedirs(release)
            import pathlib
            _, inputs, want = goldens._golden(task, pathlib.Path(release))   # pylint: disable=protected-access
            golden = goldens.decisions(task, want, inputs, serving=False)
            model = cls.from_pretrained(release, **kwargs)
            lengths = {"max_predictions_per_seq": inputs["masked_lm_positions"].shape[-1]} \
                if task == "pretraining" else {}
            exported = lite.LiteModel(lite.convert(model, inputs["input_ids"].shape[-1], goldens.BATCH, "dynamic",
                                                   dynamic_shapes=True, **lengths))
            routes = {"lite": goldens.decisions(task, goldens.run_at_own_lengths(task, exported, inputs), inputs,
                                                serving=True)}
            if task in HF_CLASSES:
                work = os.path.join(root, task)
                float_out = ort_outputs(task, release, work, inputs, quantized=False)
                for name, value in float_out.items():
                    difference = np.max(np.abs(value - want[name]))
                    assert difference < 1e-3, f"{task}: ONNX Runtime's float {name} differs by {difference}"
                routes["ort"] = goldens.decisions(task, ort_outputs(task, release, work, inputs, quantized=True),
                                                  inputs, serving=False)
            for name, (argmax, probabilities) in golden.items():
                cells = []
                for route in ("lite", "ort"):
                    if route not in routes:
                        cells += ["-", "-"]
                        continue
                    got_argmax, got_probabilities = routes[route][name]
                    # SQuAD 2.0 from LiteRT: the top-k probabilities of the export's beam.
                    cells += [f"{int(np.sum(np.asarray(got_argmax) != np.asarray(argmax)))} / {np.size(argmax)}",
                              f"{np.max(np.abs(got_probabilities - probabilities)):.4f}"]
                print(f"| {task} | {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
