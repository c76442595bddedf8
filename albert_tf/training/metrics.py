"""Evaluation metrics of the fine-tuning scripts as pure NumPy functions.

Definitions follow the original `classifier_utils.model_fn_builder` metric functions (TF1 streaming
metrics computed over the whole eval set): every metric takes optional per-example `weights`
(`is_real_example`, 0 for TPU padding examples) and treats a weight as a count.

* `accuracy`: `tf.metrics.accuracy` = sum(w * [label == pred]) / sum(w).
* `matthews_corr`: `(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))` from weighted counts, 0 when the
  denominator is 0 (`tf.div_no_nan`).
* `pearson`: `contrib.metrics.streaming_pearson_correlation` = weighted covariance over the product of
  weighted standard deviations (the normalisation cancels).
* `mean_squared_error`, `weighted_mean`: `tf.metrics.mean_squared_error`, `tf.metrics.mean`.
* `f1` (MRPC, QQP) and `spearman` (STS-B) are not in the original's eval output; they are the GLUE
  leaderboard's secondary metrics: binary F1 of class 1, and Pearson of average ranks (ties share the mean
  rank).
"""

import numpy as np

from albert_tf.errors import InputError


def _weights(weights, n):
    if weights is None:
        return np.ones([n], np.float64)
    weights = np.asarray(weights, np.float64).reshape([-1])
    if weights.shape[0] != n:
        raise InputError(f"`weights` must have {n} entries. Received: {weights.shape[0]}.")
    return weights


def _flat(values):
    return np.asarray(values).reshape([-1])


def _check_lengths(a, b):
    if a.shape[0] != b.shape[0]:
        raise InputError(f"`labels` and `predictions` must have the same length. "
                         f"Received: {a.shape[0]} and {b.shape[0]}.")


def accuracy(labels, predictions, weights=None):
    """Weighted fraction of `predictions == labels` (0.0 for an empty set)."""
    labels, predictions = _flat(labels), _flat(predictions)
    _check_lengths(labels, predictions)
    w = _weights(weights, labels.shape[0])
    total = w.sum()
    return float((w * (labels == predictions)).sum() / total) if total > 0 else 0.0


def confusion_counts(labels, predictions, weights=None, positive=1):
    """Weighted `(tp, tn, fp, fn)` of a binary task, `positive` being the positive class id."""
    labels, predictions = _flat(labels), _flat(predictions)
    _check_lengths(labels, predictions)
    w = _weights(weights, labels.shape[0])
    true_pos_label = labels == positive
    pos_pred = predictions == positive
    tp = float((w * (true_pos_label & pos_pred)).sum())
    tn = float((w * (~true_pos_label & ~pos_pred)).sum())
    fp = float((w * (~true_pos_label & pos_pred)).sum())
    fn = float((w * (true_pos_label & ~pos_pred)).sum())
    return tp, tn, fp, fn


def matthews_corr(labels, predictions, weights=None):
    """Matthews correlation coefficient as the original CoLA metric (0.0 when undefined)."""
    tp, tn, fp, fn = confusion_counts(labels, predictions, weights)
    denominator = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5
    return float((tp * tn - fp * fn) / denominator) if denominator > 0 else 0.0


def f1(labels, predictions, weights=None, positive=1):
    """Binary F1 of class `positive`: `2 tp / (2 tp + fp + fn)` (0.0 when there is no positive at all)."""
    tp, _, fp, fn = confusion_counts(labels, predictions, weights, positive)
    denominator = 2 * tp + fp + fn
    return float(2 * tp / denominator) if denominator > 0 else 0.0


def pearson(predictions, labels, weights=None):
    """Weighted Pearson correlation (`streaming_pearson_correlation`); 0.0 when a variance is 0."""
    x = _flat(predictions).astype(np.float64)
    y = _flat(labels).astype(np.float64)
    _check_lengths(x, y)
    w = _weights(weights, x.shape[0])
    total = w.sum()
    if total <= 0:
        return 0.0
    dx = x - (w * x).sum() / total
    dy = y - (w * y).sum() / total
    cov = (w * dx * dy).sum()
    var = (w * dx * dx).sum() * (w * dy * dy).sum()
    return float(cov / np.sqrt(var)) if var > 0 else 0.0


def rankdata(values):
    """1-based ranks, ties given their average rank (as `scipy.stats.rankdata(method="average")`)."""
    values = _flat(values)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty([values.shape[0]], np.float64)
    sorted_values = values[order]
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(predictions, labels, weights=None):
    """Spearman rank correlation: Pearson of the average ranks of the examples with weight > 0."""
    x = _flat(predictions)
    y = _flat(labels)
    _check_lengths(x, y)
    keep = _weights(weights, x.shape[0]) > 0
    return pearson(rankdata(x[keep]), rankdata(y[keep]))


def mean_squared_error(labels, predictions, weights=None):
    """Weighted mean of `(labels - predictions)^2`."""
    labels = _flat(labels).astype(np.float64)
    predictions = _flat(predictions).astype(np.float64)
    _check_lengths(labels, predictions)
    return weighted_mean((labels - predictions) ** 2, weights)


def weighted_mean(values, weights=None):
    """`tf.metrics.mean(values, weights)` (0.0 for an empty set)."""
    values = _flat(values).astype(np.float64)
    w = _weights(weights, values.shape[0])
    total = w.sum()
    return float((w * values).sum() / total) if total > 0 else 0.0
