"""NumPy transcription of the original `optimization.create_optimizer`, `AdamWeightDecayOptimizer` and
`LAMBOptimizer` (`optimization.py`, `lamb_optimizer.py`): the reference of the optimizers' tests under every
backend."""

import re

import numpy as np


def np_learning_rate(step, init_lr, num_train_steps, num_warmup_steps, poly_power=1.0, start_warmup_step=0):
    decayed = init_lr * (1.0 - min(step, num_train_steps) / num_train_steps) ** poly_power
    if num_warmup_steps:
        s = step - start_warmup_step
        if s < num_warmup_steps:
            return init_lr * s / num_warmup_steps
    return decayed


def np_step(params, grads, m, v, names, lr, kind):
    """One update of every variable; `params`, `m`, `v` are dicts updated in place."""
    global_norm = np.sqrt(sum(np.sum(np.square(g)) for g in grads.values()))
    scale = 1.0 / max(global_norm, 1.0)                        # tf.clip_by_global_norm(grads, 1.0)
    for name in names:
        g = grads[name] * scale
        m[name] = 0.9 * m[name] + 0.1 * g
        v[name] = 0.999 * v[name] + 0.001 * g * g
        update = m[name] / (np.sqrt(v[name]) + 1e-6)
        excluded = any(re.search(p, name) for p in ("LayerNorm", "layer_norm", "bias"))
        if not excluded:
            update = update + 0.01 * params[name]
        ratio = 1.0
        if kind == "lamb" and not excluded:
            w_norm = np.linalg.norm(params[name])
            u_norm = np.linalg.norm(update)
            ratio = w_norm / u_norm if (w_norm > 0 and u_norm > 0) else 1.0
        params[name] = params[name] - ratio * lr * update
