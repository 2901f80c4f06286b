"""Flax training steps as flax's examples write them, shared by ``tests/test_user_functions.py``
(``jitbench.measure``) and the user project of ``tests/test_jit_fixture.py`` (the
``jit_benchmark`` fixture), which copies this file beside its tests."""

import numpy as np


def batch():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    return (jnp.asarray(rng.standard_normal((32, 20)), jnp.float32),
            jnp.asarray(rng.integers(0, 10, 32)))


def linen_step():
    """(train_step, state, batch): a linen MLP in a ``TrainState`` with optax Adam;
    ``train_step(state, batch) -> (state, metrics)``."""
    import jax
    import optax
    from flax import linen as nn
    from flax.training import train_state

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(10)(nn.relu(nn.Dense(32)(x)))

    x, y = batch()
    model = MLP()
    state = train_state.TrainState.create(
        apply_fn=model.apply, params=model.init(jax.random.PRNGKey(0), x)["params"],
        tx=optax.adam(1e-3))

    def train_step(state, batch):
        x, y = batch

        def loss_fn(params):
            logits = state.apply_fn({"params": params}, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), {"loss": loss}

    return train_step, state, (x, y)


def nnx_step():
    """(train_step, model, optimizer, x, y): an NNX MLP and optimizer changed in place by an
    ``@nnx.jit`` step, as NNX's docs write it."""
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1, self.l2 = nnx.Linear(20, 32, rngs=rngs), nnx.Linear(32, 10, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    return (train_step, model, optimizer, *batch())
