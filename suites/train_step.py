"""Training steps: forward, backward and the optimizer update, with state that every call
changes (weights, optimizer slots, batch-norm moving statistics). One call is one step on a
fixed batch of MNIST-like data (28×28×1 images, 10 classes, one-hot labels), float32.

Models (the ``model`` parameter of the grid):

- ``mlp``: dense(784→W) - BN - relu, dense(W→W) - BN - relu, dense(W→10), softmax
  cross-entropy (mean over the batch);
- ``cnn``: conv3×3(1→C, same) - BN - relu - avgpool2, conv3×3(C→2C) - BN - relu - avgpool2,
  dense(7·7·2C→10), the same loss.

Variants: the optimizer (``sgd``: lr 0.05; ``adam``: lr 1e-3, β 0.9 / 0.999, ε 1e-7, Keras's
update) × batch norm (``bn_train``: batch statistics, moving statistics updated with momentum
0.99; ``bn_infer``: the frozen moving statistics, γ and β still trained, the case the
tfcompile experiments failed on; ``no_bn``: a bias instead). With batch norm the layer before
it has no bias; ε = 1e-3.

TensorFlow is written as its users write it: Keras layers and a Keras optimizer, variables
updated in place inside the step (``tf.GradientTape`` + ``optimizer.apply_gradients``). JAX is
functional: ``step(state, x, y) -> (loss, state)`` with the parameters, the moving statistics
and the optimizer's slots in one pytree; the harness carries it from call to call and, in the
``donate`` mode, donates it (``jax.jit(step, donate_argnums=0)``).

Numerics: the answer checked is the loss of step 3 and the model's state after it (weights and
moving statistics; the optimizer's slots shape the weights from step 2 on), from the same
initial state (fixed, seed 0) in every framework and mode, against this file's numpy float64
reference of the same 3 steps (forward and backward written out by hand, the CNN's
convolution by im2col). Timing: the state evolves through warm-up and samples, as in training;
the batch is placed once; the A/A control is a second build with its own state.

FLOPs: the forward pass's matmuls/convolutions ×3 (backward ≈ 2× forward), elementwise work
and the update left out.
"""

from __future__ import annotations

import numpy as np

from jitbench.define.workload import TrainStep, Workload

CHECK_STEPS = 3
SGD_LR = 0.05
ADAM_LR, ADAM_B1, ADAM_B2, ADAM_EPS = 1e-3, 0.9, 0.999, 1e-7
BN_MOMENTUM, BN_EPS = 0.99, 1e-3
IMAGE, CLASSES = 28, 10

OPTIMIZERS = ("sgd", "adam")
BATCH_NORM = ("bn_train", "bn_infer", "no_bn")
VARIANTS = tuple(f"{o}-{b}" for o in OPTIMIZERS for b in BATCH_NORM)

GRID = {
    "quick": [dict(model="mlp", batch=32, width=64), dict(model="cnn", batch=16, channels=4)],
    "full": [dict(model=m, batch=b, **extra)
             for m, extra in (("mlp", dict(width=256)), ("cnn", dict(channels=16)))
             for b in (32, 128, 512)],
}


def _size(p):
    if p["model"] == "mlp":
        return f"mlp-W{p['width']}-B{p['batch']}"
    return f"cnn-C{p['channels']}-B{p['batch']}"


def _split(variant: str) -> tuple[str, str]:
    optimizer, bn = variant.split("-")
    return optimizer, bn


# --------------------------------------------------------------------------- shapes and data

def layer_shapes(p) -> list[tuple[str, tuple[int, ...]]]:
    """(name, kernel shape) of each weighted layer, in order; the last one has no BN."""
    if p["model"] == "mlp":
        w = p["width"]
        return [("l1", (IMAGE * IMAGE, w)), ("l2", (w, w)), ("out", (w, CLASSES))]
    c = p["channels"]
    return [("l1", (3, 3, 1, c)), ("l2", (3, 3, c, 2 * c)),
            ("out", ((IMAGE // 4) ** 2 * 2 * c, CLASSES))]


def initial_model(p, variant: str, dtype="float32") -> dict:
    """The model's initial state (seed 0, the same for every framework and mode):
    ``{"params": {...}, "stats": {...}}`` (no ``stats`` without batch norm)."""
    _, bn = _split(variant)
    rng = np.random.default_rng(0)
    params, stats = {}, {}
    layers = layer_shapes(p)
    for i, (name, shape) in enumerate(layers):
        fan_in = int(np.prod(shape[:-1]))
        params[f"{name}/kernel"] = (rng.standard_normal(shape) * (2.0 / fan_in) ** 0.5
                                    ).astype(dtype)
        n = shape[-1]
        if bn != "no_bn" and i < len(layers) - 1:
            params[f"{name}/gamma"] = np.ones(n, dtype)
            params[f"{name}/beta"] = np.zeros(n, dtype)
            stats[f"{name}/mean"] = np.zeros(n, dtype)
            stats[f"{name}/var"] = np.ones(n, dtype)
        else:
            params[f"{name}/bias"] = np.zeros(n, dtype)
    return {"params": params, "stats": stats} if stats else {"params": params}


def inputs(p, dtype, rng):
    x = rng.standard_normal((p["batch"], IMAGE, IMAGE, 1)).astype(dtype)
    if p["model"] == "mlp":
        x = x.reshape(p["batch"], IMAGE * IMAGE)
    y = np.eye(CLASSES, dtype=dtype)[rng.integers(0, CLASSES, p["batch"])]
    return x, y


def flops(p, variant):
    b = p["batch"]
    if p["model"] == "mlp":
        fwd = sum(2.0 * b * np.prod(s) for _, s in layer_shapes(p))
    else:
        (_, k1), (_, k2), (_, k3) = layer_shapes(p)
        fwd = (2.0 * b * IMAGE ** 2 * np.prod(k1) + 2.0 * b * (IMAGE // 2) ** 2 * np.prod(k2)
               + 2.0 * b * np.prod(k3))
    return 3.0 * fwd


def reduction(p, variant):
    """The longest sum of one step: a layer's fan-in, or the weight gradient's sum over the
    batch (and, for a convolution, over the image's positions)."""
    fan_in = max(int(np.prod(s[:-1])) for _, s in layer_shapes(p))
    over = p["batch"] * (IMAGE * IMAGE if p["model"] == "cnn" else 1)
    return max(fan_in, over)


# --------------------------------------------------------------------------- numpy reference

def _conv(x, k):
    """3×3 'same' convolution, NHWC × HWIO, by im2col: (output, columns)."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.stack([xp[:, i:i + h, j:j + w, :] for i in range(3) for j in range(3)], axis=3)
    cols = cols.reshape(n, h, w, 9 * c)
    return cols @ k.reshape(9 * c, -1), cols


def _conv_back(dz, cols, k, x_shape):
    n, h, w, c = x_shape
    dk = (cols.reshape(-1, 9 * c).T @ dz.reshape(-1, dz.shape[-1])).reshape(k.shape)
    dcols = (dz @ k.reshape(9 * c, -1).T).reshape(n, h, w, 3, 3, c)
    dxp = np.zeros((n, h + 2, w + 2, c))
    for i in range(3):
        for j in range(3):
            dxp[:, i:i + h, j:j + w, :] += dcols[:, :, :, i, j, :]
    return dk, dxp[:, 1:-1, 1:-1, :]


def _pool(z):
    n, h, w, c = z.shape
    return z.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))


def _pool_back(dy):
    return np.repeat(np.repeat(dy, 2, axis=1), 2, axis=2) / 4.0


def _step64(model, opt, x, y, p, variant):
    """One training step in float64: (loss, model, opt) — model and opt updated copies."""
    optimizer, bn = _split(variant)
    prm, st = model["params"], dict(model.get("stats", {}))
    names = [n for n, _ in layer_shapes(p)]
    cache, h = [], x
    for name in names[:-1]:  # weighted layer - (BN) - relu - (pool)
        k = prm[f"{name}/kernel"]
        z, cols = _conv(h, k) if p["model"] == "cnn" else (h @ k, None)
        if bn == "no_bn":
            z = z + prm[f"{name}/bias"]
            zhat = inv = None
            a = z
        else:
            axes = tuple(range(z.ndim - 1))
            if bn == "bn_train":
                mu, var = z.mean(axis=axes), z.var(axis=axes)
                st[f"{name}/mean"] = st[f"{name}/mean"] * BN_MOMENTUM + mu * (1 - BN_MOMENTUM)
                st[f"{name}/var"] = st[f"{name}/var"] * BN_MOMENTUM + var * (1 - BN_MOMENTUM)
            else:
                mu, var = model["stats"][f"{name}/mean"], model["stats"][f"{name}/var"]
            inv = 1.0 / np.sqrt(var + BN_EPS)
            zhat = (z - mu) * inv
            a = prm[f"{name}/gamma"] * zhat + prm[f"{name}/beta"]
        r = np.maximum(a, 0.0)
        out = _pool(r) if p["model"] == "cnn" else r
        cache.append((name, h, cols, a, zhat, inv))
        h = out
    flat = h.reshape(h.shape[0], -1)
    logits = flat @ prm["out/kernel"] + prm["out/bias"]
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    soft = e / e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(e.sum(axis=1)) + m[:, 0] - (y * logits).sum(axis=1)))

    g = {}
    dlogits = (soft - y) / x.shape[0]
    g["out/kernel"], g["out/bias"] = flat.T @ dlogits, dlogits.sum(axis=0)
    dh = (dlogits @ prm["out/kernel"].T).reshape(h.shape)
    for name, h_in, cols, a, zhat, inv in reversed(cache):
        dr = _pool_back(dh) if p["model"] == "cnn" else dh
        da = dr * (a > 0)
        if bn == "no_bn":
            dz = da
            g[f"{name}/bias"] = da.reshape(-1, da.shape[-1]).sum(axis=0)
        else:
            axes = tuple(range(da.ndim - 1))
            g[f"{name}/gamma"] = (da * zhat).sum(axis=axes)
            g[f"{name}/beta"] = da.sum(axis=axes)
            dzhat = da * prm[f"{name}/gamma"]
            if bn == "bn_train":
                n = np.prod([da.shape[i] for i in axes])
                dz = inv / n * (n * dzhat - dzhat.sum(axis=axes)
                                - zhat * (dzhat * zhat).sum(axis=axes))
            else:
                dz = dzhat * inv
        k = prm[f"{name}/kernel"]
        if p["model"] == "cnn":
            g[f"{name}/kernel"], dh = _conv_back(dz, cols, k, h_in.shape)
        else:
            g[f"{name}/kernel"], dh = h_in.T @ dz, dz @ k.T

    new, opt = _update(prm, g, opt, optimizer)
    model = {"params": new, "stats": st} if st else {"params": new}
    return loss, model, opt


def _update(prm, g, opt, optimizer):
    if optimizer == "sgd":
        return {k: prm[k] - SGD_LR * g[k] for k in prm}, opt
    t = opt["t"] + 1
    alpha = ADAM_LR * np.sqrt(1 - ADAM_B2 ** t) / (1 - ADAM_B1 ** t)
    m = {k: opt["m"][k] + (g[k] - opt["m"][k]) * (1 - ADAM_B1) for k in prm}
    v = {k: opt["v"][k] + (g[k] ** 2 - opt["v"][k]) * (1 - ADAM_B2) for k in prm}
    new = {k: prm[k] - alpha * m[k] / (np.sqrt(v[k]) + ADAM_EPS) for k in prm}
    return new, {"t": t, "m": m, "v": v}


def reference(inputs64, p, variant):
    """Loss of step ``CHECK_STEPS`` and the model's state after it, in float64."""
    x, y = inputs64
    if p["model"] == "cnn":
        x = x.reshape(-1, IMAGE, IMAGE, 1)
    model = {part: {k: v.astype(np.float64) for k, v in d.items()}
             for part, d in initial_model(p, variant).items()}
    opt = {"t": 0, "m": {k: np.zeros_like(v) for k, v in model["params"].items()},
           "v": {k: np.zeros_like(v) for k, v in model["params"].items()}}
    for _ in range(CHECK_STEPS):
        loss, model, opt = _step64(model, opt, x, y, p, variant)
    return np.array(loss), model


def _shown(state):
    return state["model"]


# --------------------------------------------------------------------------- TensorFlow

def tf_stages(p, dtype, variant):
    optimizer, bn = _split(variant)

    def make():
        import keras
        import tensorflow as tf

        init = initial_model(p, variant, dtype)
        prm, stats = init["params"], init.get("stats", {})
        names = [n for n, _ in layer_shapes(p)]
        layers, norms = {}, {}
        shape = (None, IMAGE, IMAGE, 1) if p["model"] == "cnn" else (None, IMAGE * IMAGE)
        for name in names[:-1]:
            kernel = prm[f"{name}/kernel"]
            if p["model"] == "cnn":
                layer = keras.layers.Conv2D(kernel.shape[-1], 3, padding="same",
                                            use_bias=bn == "no_bn", dtype=dtype)
            else:
                layer = keras.layers.Dense(kernel.shape[-1], use_bias=bn == "no_bn",
                                           dtype=dtype)
            layer.build(shape)
            shape = layer.compute_output_shape(shape)
            layers[name] = layer
            if bn != "no_bn":
                norm = keras.layers.BatchNormalization(momentum=BN_MOMENTUM, epsilon=BN_EPS,
                                                       dtype=dtype)
                norm.build(shape)
                norms[name] = norm
            if p["model"] == "cnn":
                shape = (None, shape[1] // 2, shape[2] // 2, shape[3])
        out = keras.layers.Dense(CLASSES, dtype=dtype)
        out.build((None, int(np.prod(shape[1:]))))
        layers["out"] = out
        pool = keras.layers.AveragePooling2D(2)

        params = {}
        for name, layer in layers.items():
            params[f"{name}/kernel"] = layer.kernel
            if layer.use_bias:
                params[f"{name}/bias"] = layer.bias
        model_stats = {}
        for name, norm in norms.items():
            params[f"{name}/gamma"], params[f"{name}/beta"] = norm.gamma, norm.beta
            model_stats[f"{name}/mean"] = norm.moving_mean
            model_stats[f"{name}/var"] = norm.moving_variance
        for key, var in params.items():
            var.assign(prm[key])
        for key, var in model_stats.items():
            var.assign(stats[key])
        trainable = list(params.values())
        opt = (keras.optimizers.SGD(SGD_LR) if optimizer == "sgd" else
               keras.optimizers.Adam(ADAM_LR, beta_1=ADAM_B1, beta_2=ADAM_B2,
                                     epsilon=ADAM_EPS))
        opt.build(trainable)

        def forward(x):
            h = x
            for name in names[:-1]:
                h = layers[name](h)
                if bn != "no_bn":
                    h = norms[name](h, training=bn == "bn_train")
                h = tf.nn.relu(h)
                if p["model"] == "cnn":
                    h = pool(h)
            return layers["out"](tf.reshape(h, (tf.shape(h)[0], -1)))

        def train_step(x, y):
            with tf.GradientTape() as tape:
                logits = forward(x)
                loss = tf.reduce_mean(
                    tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
            grads = tape.gradient(loss, trainable)
            opt.apply_gradients(zip(grads, trainable))
            return loss

        model = {"params": params, "stats": model_stats} if model_stats else {"params": params}
        return train_step, {"model": model, "opt": list(opt.variables)}

    return [TrainStep(make, shown=_shown, check_steps=CHECK_STEPS)]


# --------------------------------------------------------------------------- JAX

def jax_stages(p, dtype, variant):
    optimizer, bn = _split(variant)
    names = [n for n, _ in layer_shapes(p)]

    def forward(params, stats, x):
        import jax.numpy as jnp
        from jax import lax

        new_stats, h = dict(stats), x
        for name in names[:-1]:
            k = params[f"{name}/kernel"]
            if p["model"] == "cnn":
                z = lax.conv_general_dilated(h, k, (1, 1), "SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
            else:
                z = h @ k
            if bn == "no_bn":
                a = z + params[f"{name}/bias"]
            else:
                axes = tuple(range(z.ndim - 1))
                if bn == "bn_train":
                    mu, var = z.mean(axis=axes), z.var(axis=axes)
                    new_stats[f"{name}/mean"] = (stats[f"{name}/mean"] * BN_MOMENTUM
                                                 + lax.stop_gradient(mu) * (1 - BN_MOMENTUM))
                    new_stats[f"{name}/var"] = (stats[f"{name}/var"] * BN_MOMENTUM
                                                + lax.stop_gradient(var) * (1 - BN_MOMENTUM))
                else:
                    mu, var = stats[f"{name}/mean"], stats[f"{name}/var"]
                a = params[f"{name}/gamma"] * (z - mu) * lax.rsqrt(var + BN_EPS) \
                    + params[f"{name}/beta"]
            h = jnp.maximum(a, 0)
            if p["model"] == "cnn":
                n, hh, ww, c = h.shape
                h = h.reshape(n, hh // 2, 2, ww // 2, 2, c).mean(axis=(2, 4))
        logits = h.reshape(h.shape[0], -1) @ params["out/kernel"] + params["out/bias"]
        return logits, new_stats

    def loss_fn(params, stats, x, y):
        import jax

        logits, new_stats = forward(params, stats, x)
        return -(y * jax.nn.log_softmax(logits)).sum(axis=1).mean(), new_stats

    def step(state, x, y):
        import jax
        import jax.numpy as jnp

        model, opt = state["model"], state["opt"]
        (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(
            model["params"], model.get("stats", {}), x, y)
        prm = model["params"]
        if optimizer == "sgd":
            new = jax.tree_util.tree_map(lambda w, d: w - SGD_LR * d, prm, g)
        else:
            t = opt["t"] + 1
            tf32 = t.astype(jnp.float32)
            alpha = ADAM_LR * jnp.sqrt(1 - ADAM_B2 ** tf32) / (1 - ADAM_B1 ** tf32)
            m = jax.tree_util.tree_map(lambda m, d: m + (d - m) * (1 - ADAM_B1), opt["m"], g)
            v = jax.tree_util.tree_map(lambda v, d: v + (d * d - v) * (1 - ADAM_B2),
                                       opt["v"], g)
            new = jax.tree_util.tree_map(
                lambda w, m, v: w - alpha * m / (jnp.sqrt(v) + ADAM_EPS), prm, m, v)
            opt = {"t": t, "m": m, "v": v}
        model = {"params": new, "stats": stats} if stats else {"params": new}
        return loss, {"model": model, "opt": opt}

    def make():
        model = initial_model(p, variant, dtype)
        zeros = {k: np.zeros_like(v) for k, v in model["params"].items()}
        opt = ({"t": np.zeros((), np.int32), "m": zeros, "v": dict(zeros)}
               if optimizer == "adam" else {})
        return step, {"model": model, "opt": opt}

    return [TrainStep(make, shown=_shown, check_steps=CHECK_STEPS)]


WORKLOAD = Workload(
    name="train_step",
    description="one training step (forward, backward, SGD/Adam update, batch norm) of an MLP "
                "and a small CNN on MNIST-like shapes, float32, state updated every call",
    grid=GRID,
    dtypes=("float32",),
    variants=VARIANTS,
    inputs=inputs,
    reference=reference,
    flops=flops,
    reduction=reduction,
    tolerance={"float32": (1e-3, 1e-4)},
    tf=tf_stages,
    jax=jax_stages,
    size_label=_size,
    stateful=True,
    # the default quick grid (`make bench`, `jitbench run` without --suite): the step with the
    # most state and the one with the least; `--suite train_step` measures all six
    default_variants={"quick": ("adam-bn_train", "sgd-no_bn")},
)
