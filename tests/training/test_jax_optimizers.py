"""The original's AdamW and LAMB (`albert_tf.training.optimization`) under JAX: `stateless_apply` inside
`jax.jit`, seven steps across the warm-up and the decay, against the NumPy transcription of the original's
`optimization.py` and `lamb_optimizer.py` (`tests/optimizer_reference.py`): no decay on LayerNorm and biases, LAMB's
trust ratio (1.0 for a zero-norm weight), the clip by global norm 1.0, the schedule.

CI runs this file in the backends tier under KERAS_BACKEND=jax (.ci/run)."""

import keras
import numpy as np
import pytest

from albert_tf.training import optimization
from optimizer_reference import np_learning_rate, np_step

pytestmark = pytest.mark.skipif(keras.backend.backend() != "jax", reason="the optimizers under JAX")


def _variable(path, value):
    *scopes, name = path.split("/")
    if not scopes:
        return keras.Variable(value, name=name)
    with keras.name_scope(scopes[0]):
        return _variable("/".join(scopes[1:] + [name]), value)


@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_stateless_apply_against_numpy(kind):
    import jax

    rng = np.random.RandomState(0)
    shapes = {"layer/kernel": (3, 4), "layer/bias": (4,), "enc/LayerNorm/gamma": (4,),
              "head/output_weights": (2, 3), "zero/kernel": (2, 2)}
    init = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
    init["zero/kernel"][:] = 0.0                                       # ||w|| = 0 -> trust ratio 1.0
    names = list(shapes)
    variables = [_variable(name, init[name]) for name in names]
    assert [optimization.variable_path(var) for var in variables] == names
    opt = optimization.create_optimizer(0.05, num_train_steps=8, num_warmup_steps=3, optimizer=kind,
                                        start_warmup_step=1)
    opt.build(variables)
    traces = []

    @jax.jit
    def step(trainable, optimizer_state, grads):
        traces.append(1)
        return opt.stateless_apply(optimizer_state, grads, trainable)

    trainable = [v.value for v in variables]
    state = [v.value for v in opt.variables]
    params = {n: init[n].astype(np.float64) for n in names}
    m = {n: np.zeros(shapes[n]) for n in names}
    v = {n: np.zeros(shapes[n]) for n in names}
    for i in range(7):                                                 # crosses warm-up end and the decay
        grads = {n: rng.normal(scale=0.5 if i % 2 else 3.0, size=shapes[n]).astype(np.float32) for n in names}
        trainable, state = step(trainable, state, [grads[n] for n in names])
        lr = np_learning_rate(i, 0.05, 8, 3, start_warmup_step=1)
        np_step(params, {n: grads[n].astype(np.float64) for n in names}, m, v, names, lr, kind)
        for n, value in zip(names, trainable):
            np.testing.assert_allclose(np.asarray(value), params[n], rtol=2e-5, atol=2e-6,
                                       err_msg=f"{kind} step {i + 1} {n}")
    assert len(traces) == 1                                            # one compilation for the seven steps
    for variable, value in zip(opt.variables, state):
        variable.assign(value)
    assert int(opt.iterations.numpy()) == 7
    assert np.abs(np.asarray(trainable[names.index("zero/kernel")])).sum() > 0
