"""The quickstart's printed report: what each step measured, next to its baselines, and where the files are."""

import math
import os

from albert_tf.quickstart import task as quickstart_task

# The dev accuracy a fine-tuned model must reach, and the majority baseline it is compared with at most, for the
# quickstart to say that fine-tuning learned the task.
TARGET_DEV_ACCURACY = 0.80
MAX_MAJORITY_BASELINE = 0.30


def learned_the_task(summary):
    """Whether the fine-tuned dev accuracy is at least `TARGET_DEV_ACCURACY` and the majority baseline at most
    `MAX_MAJORITY_BASELINE`."""
    return (summary["finetune"]["dev_accuracy"] >= TARGET_DEV_ACCURACY
            and summary["task"]["majority_dev"] <= MAX_MAJORITY_BASELINE)


def compare_initialisations(start, random, n):
    """One plain sentence on dev accuracy `start` (from the initial weights) vs `random` (from random
    initialisation) on `n` dev examples: a difference within two standard errors is called no clear difference."""
    pooled = (start + random) / 2
    margin = 2 * math.sqrt(max(pooled * (1 - pooled), 1e-4) * 2 / max(n, 1))
    diff = start - random
    if diff > margin:
        return (f"Starting from the pretrained weights helps: {diff:+.3f} dev accuracy over the same fine-tuning "
                f"from random initialisation (more than twice the standard error, {margin / 2:.3f}).")
    if diff < -margin:
        return (f"Starting from the pretrained weights does worse here: {diff:+.3f} dev accuracy against the same "
                f"fine-tuning from random initialisation (more than twice the standard error, {margin / 2:.3f}).")
    return (f"No clear difference in the end from random initialisation ({diff:+.3f} dev accuracy, within twice the "
            f"standard error of {margin / 2:.3f} on {n} dev passages).")


def _pretraining_lines(summary):
    c, b, a = summary["chance"], summary["untrained"], summary["trained"]
    lines = [
        "",
        f"1. Pretraining: {summary['pretrain_steps']} steps of LAMB on {summary['corpus']['train']['characters']:,} "
        f"characters; held-out evaluation ({c['heldout_instances']} instances, {c['heldout_masked_tokens']} masked "
        "tokens):",
        "  %-28s %10s %10s %10s" % ("", "chance", "untrained", "trained"),
        "  %-28s %10.4f %10.4f %10.4f" % ("MLM accuracy (unigram base)", c["mlm_unigram_accuracy"],
                                          b["masked_lm_accuracy"], a["masked_lm_accuracy"]),
        "  %-28s %10.4f %10.4f %10.4f" % ("SOP accuracy (majority)", c["sop_majority_accuracy"],
                                          b["sentence_order_accuracy"], a["sentence_order_accuracy"]),
        "  %-28s %10s %10.4f %10.4f" % ("MLM loss", "", b["masked_lm_loss"], a["masked_lm_loss"]),
        f"  Where a fitting word ranks among the {summary['vocab_size']} pieces at [MASK] (1 = first choice), "
        "untrained -> trained:",
    ]
    for row in summary["fill_mask"]:
        rank = (f"{row['rank_before']:>5} -> {row['rank_after']:<5}" if row["rank_after"] is not None
                else "  (no fitting word is one piece)")
        lines.append(f"    {row['sentence']:<55} {'/'.join(row['answers'][:3]):<22} {rank}  first choice "
                     f"{row['top_after']}")
    lines.append("  A few minutes of pretraining on 2 cores reach the plateau where the model predicts frequent "
                 "pieces (benchmarks/README.md, \"Pretraining on the quickstart's corpus\"); the fine-tuning below "
                 "is where learning shows in minutes.")
    return lines


def _finetune_lines(summary):
    task, tuned = summary["task"], summary["finetune"]
    settings = tuned.get("settings", {})
    start = ("the pretrained checkpoint" if not summary.get("init") else f"--init={summary['init']}")
    examples = task["examples"]
    lines = [
        "",
        f"2. Fine-tuning on the labelled task: which part of the standard library a passage comes from "
        f"({', '.join(quickstart_task.CLASSES)}).",
        f"  {examples['train']} training passages; {examples['dev']} dev and {examples['test']} test passages "
        f"from {task['heldout_docstrings']} docstrings that pretraining did not see "
        f"({os.path.join(task['data_dir'], quickstart_task.TASK_DIR)}).",
        f"  run_classifier(task_name=\"stdlib\"): {settings.get('train_step')} steps, AdamW "
        f"{settings.get('learning_rate')}, batch {settings.get('train_batch_size')}, "
        f"max_seq_length {settings.get('max_seq_length')}:",
        "  %-44s %14s %14s" % ("", "dev accuracy", "test accuracy"),
        "  %-44s %14.3f %14.3f" % ("majority baseline", task["majority_dev"], task["majority_test"]),
        "  %-44s %14.3f %14.3f" % ("fine-tuned from " + start, tuned["dev_accuracy"], tuned["test_accuracy"]),
    ]
    random = summary.get("finetune_random")
    if random:
        lines.append("  %-44s %14.3f %14.3f" % ("fine-tuned from random initialisation", random["dev_accuracy"],
                                               random["test_accuracy"]))
    lines.append(f"  (dev: model.ckpt-best, the runner's pick among {len(tuned['dev_history'])} checkpoints by dev "
                 "accuracy; test: its predictions, scored against test_labels.tsv.)")
    verdict = "reaches" if learned_the_task(summary) else "does NOT reach"
    lines.append(f"  The fine-tuned model {verdict} the target: dev accuracy >= {TARGET_DEV_ACCURACY:.2f} with a "
                 f"majority baseline <= {MAX_MAJORITY_BASELINE:.2f}.")
    if random:
        lines.append("  " + compare_initialisations(tuned["dev_accuracy"], random["dev_accuracy"], examples["dev"]))
        if tuned["dev_history"] and random["dev_history"]:
            (step, first), (_, first_random) = tuned["dev_history"][0], random["dev_history"][0]
            lines.append(f"  At the first checkpoint (step {step}) the dev accuracy is {first:.3f} from {start} and "
                         f"{first_random:.3f} from random initialisation (the curves show both runs).")
    return lines


def _served_lines(summary):
    served = summary["served"]
    lines = ["", f"3. The fine-tuned export ({summary['finetune']['export_path']}) served from a fresh process "
             "(SessionModel: loaded as TF Serving loads it; raw text through the serve_text signature):"]
    for answer in served["answers"]:
        mark = "right" if answer["right"] else f"wrong, expected {answer['expected']}"
        lines.append(f"    {answer['sentence']:<75} -> {answer['label']:<8} {answer['score']:.2f}  ({mark})")
    right = sum(answer["right"] for answer in served["answers"])
    lines.append(f"  {right} of {len(served['answers'])} answers right.")
    return lines


def format_report(summary):
    """The text printed at the end of `albert-quickstart`."""
    out = summary["output_dir"]
    lines = ["", "albert_tf quickstart: done in %.0f s (%s)" % (summary["total_s"], ", ".join(
        f"{k} {v:.0f}s" for k, v in summary["timings_s"].items()))]
    if not summary.get("init"):
        lines += _pretraining_lines(summary)
    lines += _finetune_lines(summary) + _served_lines(summary)
    lines += ["", "Curves (pretraining and fine-tuning loss, accuracy):"]
    lines.append(f"  {summary['curves']}" if summary.get("curves") else
                 "  no PNG: matplotlib is not installed (pip install matplotlib)")
    lines += [f"  tensorboard --logdir {out}", "", "Files:",
              f"  task (GLUE TSV)  {os.path.join(summary['task']['data_dir'], quickstart_task.TASK_DIR)}",
              f"  fine-tuning      {os.path.join(out, 'finetune')}",
              f"  SavedModel       {summary['finetune']['export_path']}",
              f"  summary          {os.path.join(out, 'quickstart_summary.json')}"]
    if not summary.get("init"):
        lines[-3:-3] = [f"  corpus           {os.path.join(out, 'corpus_train.txt')}",
                        f"  SentencePiece    {os.path.join(out, 'spm.model')}",
                        f"  pretraining      {os.path.join(out, 'pretrain')}"]
    lines += _go_on_lines(out)
    return "\n".join(lines)


def _go_on_lines(out):
    return [
        "",
        "Go on:",
        "  # the same task from Google's ALBERT-base weights (downloads 45 MB once; slow on a CPU)",
        f"  albert-quickstart --init=albert_base_v2 --output_dir={out}_base",
        "  # fine-tune on GLUE (data layouts and recipes: docs/)",
        "  python run_classifier.py --task_name=MNLI --data_dir=glue --output_dir=out_mnli \\",
        "      --init_checkpoint=albert_base_v2 --hparams_preset=albert --do_train --do_eval",
        "  # pretrain on your own corpus (one sentence per line, blank line between documents)",
        "  albert-train-vocab --input=my_corpus.txt --model_prefix=30k-clean --vocab_size=30000",
        "  albert-create-pretraining-data --input_file=my_corpus.txt --output_file=train.tfrecord \\",
        "      --spm_model_file=30k-clean.model --vocab_file=30k-clean.vocab --max_seq_length=512 --num_workers=8",
        "  python run_pretraining.py --albert_config_file=albert_config.json --input_file=train.tfrecord \\",
        "      --output_dir=pretrain --train_batch_size=4096 --num_train_steps=125000",
        "",
    ]
