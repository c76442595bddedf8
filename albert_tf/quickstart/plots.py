"""The quickstart's curves: the TensorBoard scalars its runs wrote, read back and drawn as one PNG.

The training loop (`albert_tf.training.loop`) writes `loss`, the loss function's scalars (`masked_lm_loss`,
`sentence_order_loss` in pretraining; `accuracy` of the training batches in fine-tuning) and the learning rate to
TensorBoard event files in each run's directory once per loop; the GLUE runner writes the dev accuracy of every
checkpoint to `eval_results.txt`. `read_scalars` reads the event files as TensorFlow's `Event` records, so
the PNG shows what `tensorboard --logdir <output_dir>` shows. matplotlib is optional: without it there is no PNG.
"""

import glob
import os

import tensorflow as tf

CURVES_FILE = "quickstart_curves.png"


def read_scalars(run_dir):
    """`{tag: [(step, value), ...]}` of the TensorBoard event files directly in `run_dir`, sorted by step."""
    scalars = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") else value.simple_value
                scalars.setdefault(value.tag, []).append((int(event.step), number))
    return {tag: sorted(points) for tag, points in scalars.items()}


def matplotlib_pyplot():
    """`matplotlib.pyplot` with a file-only backend, or None when matplotlib is not installed."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    return plt


def _xy(points):
    return [p[0] for p in points], [p[1] for p in points]


def plot_curves(path, pretrain_dir, runs, majority=None):
    """Draws pretraining losses, fine-tuning losses and accuracies in one PNG at `path`.

    Args:
        path: str, the PNG to write.
        pretrain_dir: str or None, the pretraining run's directory (its event files).
        runs: `[(name, run_dir, [(step, dev accuracy), ...]), ...]`, the fine-tuning runs.
        majority: float or None, the majority baseline drawn on the accuracy panel.

    Returns:
        `path`, or None when matplotlib is not installed.
    """
    plt = matplotlib_pyplot()
    if plt is None:
        return None
    figure, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    pretrain = read_scalars(pretrain_dir) if pretrain_dir else {}
    for tag, label in (("loss", "total"), ("masked_lm_loss", "masked LM"), ("sentence_order_loss", "sentence order")):
        if tag in pretrain:
            axes[0].plot(*_xy(pretrain[tag]), marker=".", label=label)
    axes[0].set(title="Pretraining: training losses", xlabel="step", ylabel="loss")
    for (name, run_dir, dev), color in zip(runs, ("tab:blue", "tab:orange", "tab:green")):
        scalars = read_scalars(run_dir)
        if "loss" in scalars:
            axes[1].plot(*_xy(scalars["loss"]), color=color, label=name)
        if "accuracy" in scalars:
            axes[2].plot(*_xy(scalars["accuracy"]), color=color, alpha=0.5, label=f"{name}: training batches")
        if dev:
            axes[2].plot(*_xy(dev), color=color, marker="o", label=f"{name}: dev set")
    axes[1].set(title="Fine-tuning: training loss", xlabel="step", ylabel="cross-entropy")
    if majority is not None:
        axes[2].axhline(majority, color="gray", linestyle="--", label="majority baseline")
    axes[2].set(title="Fine-tuning: accuracy", xlabel="step", ylabel="accuracy", ylim=(0, 1.02))
    for axis in axes:
        if axis.has_data():
            axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    tmp = path + ".tmp.png"
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    os.replace(tmp, path)
    return path
