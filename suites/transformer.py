"""A transformer block, as most jitted models are built now (pre-layer-norm, GPT style):

    h = x + Attention(LN1(x))          multi-head self-attention, causal mask, no biases
    y = h + MLP(LN2(h))                MLP(u) = GELU(u W1 + c1) W2 + c2, 4x wide

    Attention(u) = concat_heads(softmax(Q Kᵀ / √dh + causal) V) Wo,  Q, K, V = u Wq, u Wk, u Wv
    LN(u) = (u - mean(u)) / √(var(u) + 1e-5) · g + b         (over the model dimension)
    GELU: the tanh form, 0.5 z (1 + tanh(√(2/π) (z + 0.044715 z³))) (jax.nn.gelu's default,
    tf.nn.gelu(approximate=True))

Dtypes: float32, and bfloat16 (inputs, parameters and every op in bfloat16, as mixed
precision leaves a GPU's matmuls; XLA's CPU backend emulates it).

Variants: ``forward`` (the block's output ``y``) and ``train`` (one SGD step, lr 0.1, on the
loss mean(y²): the loss and the updated parameters, forward and backward in one program). The
parameters are inputs (a dict), so every call starts from the same ones: XLA's fusion of the
elementwise and reduction chains around the matmuls (layer norm, softmax, GELU, residuals) is
what JIT changes here.

The float64 reference is numpy, its backward written out by hand (checked against finite
differences in ``tests/test_transformer.py``).

FLOPs: the forward's matmuls, 2·B·T·(4D² + 2·D·F) for the projections and MLP plus
2·2·B·T²·D for QKᵀ and PV (the masked half counted: the kernels compute it); ``train`` ×3.
"""

from __future__ import annotations

import math

from jitbench.define.workload import Workload

LR = 0.1
EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)
NAMES = ("ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b", "w1", "c1", "w2", "c2")

GRID = {
    "quick": [dict(batch=2, seq=32, model=64, heads=4), dict(batch=4, seq=64, model=128, heads=4)],
    "full": [dict(batch=8, seq=128, model=256, heads=4),
             dict(batch=8, seq=512, model=512, heads=8),
             dict(batch=8, seq=1024, model=768, heads=12)],
}


def _size(p):
    return f"B{p['batch']}-T{p['seq']}-D{p['model']}-H{p['heads']}"


def params_of(p, dtype, rng) -> dict:
    """Initial parameters (scaled so activations stay O(1))."""
    import numpy as np

    d, f = p["model"], 4 * p["model"]
    out = {"ln1_g": 1.0 + 0.1 * rng.standard_normal(d), "ln1_b": 0.1 * rng.standard_normal(d),
           "ln2_g": 1.0 + 0.1 * rng.standard_normal(d), "ln2_b": 0.1 * rng.standard_normal(d),
           "c1": 0.1 * rng.standard_normal(f), "c2": 0.1 * rng.standard_normal(d)}
    for name, shape in (("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)),
                        ("w1", (d, f)), ("w2", (f, d))):
        out[name] = rng.standard_normal(shape) / math.sqrt(shape[0])
    return {k: np.asarray(out[k]).astype(dtype) for k in NAMES}


def inputs(p, dtype, rng):
    if dtype == "bfloat16":
        import ml_dtypes  # noqa: F401  (numpy knows "bfloat16" once it is imported)
    x = rng.standard_normal((p["batch"], p["seq"], p["model"])).astype(dtype)
    return x, params_of(p, dtype, rng)


def flops(p, variant):
    b, t, d = p["batch"], p["seq"], p["model"]
    fwd = 2.0 * b * t * (4 * d * d + 2 * d * 4 * d) + 2.0 * 2 * b * t * t * d
    return fwd * (3 if variant == "train" else 1)


# --------------------------------------------------------------------------- float64 reference

def _ln(u, g, b):
    import numpy as np

    mu = u.mean(-1, keepdims=True)
    sigma = np.sqrt(((u - mu) ** 2).mean(-1, keepdims=True) + EPS)
    xhat = (u - mu) / sigma
    return xhat * g + b, (xhat, sigma)


def _ln_back(du, cache, g):
    xhat, sigma = cache
    dxhat = du * g
    dx = (dxhat - dxhat.mean(-1, keepdims=True)
          - xhat * (dxhat * xhat).mean(-1, keepdims=True)) / sigma
    return dx, (du * xhat).sum((0, 1)), du.sum((0, 1))


def _heads(a, h):
    b, t, d = a.shape
    return a.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)


def _merge(a):
    b, h, t, dh = a.shape
    return a.transpose(0, 2, 1, 3).reshape(b, t, h * dh)


def forward64(x, w, heads):
    """(y, the forward's intermediate values for ``backward64``), float64."""
    import numpy as np

    t, dh = x.shape[1], x.shape[2] // heads
    u1, ln1 = _ln(x, w["ln1_g"], w["ln1_b"])
    q, k, v = (_heads(u1 @ w[n], heads) for n in ("wq", "wk", "wv"))
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
    s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    prob = e / e.sum(-1, keepdims=True)
    a = _merge(prob @ v)
    h = x + a @ w["wo"]
    u2, ln2 = _ln(h, w["ln2_g"], w["ln2_b"])
    z = u2 @ w["w1"] + w["c1"]
    th = np.tanh(GELU_C * (z + 0.044715 * z ** 3))
    g = 0.5 * z * (1.0 + th)
    y = h + g @ w["w2"] + w["c2"]
    return y, dict(u1=u1, ln1=ln1, q=q, k=k, v=v, prob=prob, a=a, u2=u2, ln2=ln2, z=z, th=th,
                   g=g)


def backward64(dy, w, c, heads):
    """The gradient of the parameters (and of ``x``) given dL/dy, float64."""
    z, th = c["z"], c["th"]
    grads = {"c2": dy.sum((0, 1)), "w2": _flat(c["g"]).T @ _flat(dy)}
    dg = dy @ w["w2"].T
    dz = dg * (0.5 * (1.0 + th) + 0.5 * z * (1.0 - th ** 2) * GELU_C * (1.0 + 3 * 0.044715
                                                                           * z ** 2))
    grads["c1"] = dz.sum((0, 1))
    grads["w1"] = _flat(c["u2"]).T @ _flat(dz)
    dh, grads["ln2_g"], grads["ln2_b"] = _ln_back(dz @ w["w1"].T, c["ln2"], w["ln2_g"])
    dh = dh + dy
    grads["wo"] = _flat(c["a"]).T @ _flat(dh)
    da = _heads(dh @ w["wo"].T, heads)
    prob, q, k, v = c["prob"], c["q"], c["k"], c["v"]
    scale = 1.0 / math.sqrt(q.shape[-1])
    dprob = da @ v.transpose(0, 1, 3, 2)
    dv = prob.transpose(0, 1, 3, 2) @ da
    ds = prob * (dprob - (dprob * prob).sum(-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.transpose(0, 1, 3, 2) @ q
    du1 = 0.0
    for name, d in (("wq", dq), ("wk", dk), ("wv", dv)):
        d = _merge(d)
        grads[name] = _flat(c["u1"]).T @ _flat(d)
        du1 = du1 + d @ w[name].T
    dx, grads["ln1_g"], grads["ln1_b"] = _ln_back(du1, c["ln1"], w["ln1_g"])
    return grads, dx + dh


def _flat(a):
    return a.reshape(-1, a.shape[-1])


def loss_and_grads64(x, w, heads):
    y, cache = forward64(x, w, heads)
    grads, _ = backward64(2.0 * y / y.size, w, cache, heads)
    return float((y ** 2).mean()), grads


def reference(xs, p, variant):
    import numpy as np

    x, w = xs
    if variant == "forward":
        return forward64(x, w, p["heads"])[0]
    loss, grads = loss_and_grads64(x, w, p["heads"])
    return np.asarray(loss), {k: w[k] - LR * grads[k] for k in NAMES}


# --------------------------------------------------------------------------- the frameworks

def jax_block(heads):
    import jax
    import jax.numpy as jnp

    def ln(u, g, b):
        mu = u.mean(-1, keepdims=True)
        var = ((u - mu) ** 2).mean(-1, keepdims=True)
        return (u - mu) * jax.lax.rsqrt(var + EPS) * g + b

    def split(a):
        bsz, t, d = a.shape
        return a.reshape(bsz, t, heads, d // heads).transpose(0, 2, 1, 3)

    def block(x, w):
        t, dh = x.shape[1], x.shape[2] // heads
        u = ln(x, w["ln1_g"], w["ln1_b"])
        q, k, v = split(u @ w["wq"]), split(u @ w["wk"]), split(u @ w["wv"])
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
        s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
        a = jax.nn.softmax(s, axis=-1) @ v
        h = x + a.transpose(0, 2, 1, 3).reshape(x.shape) @ w["wo"]
        g = jax.nn.gelu(ln(h, w["ln2_g"], w["ln2_b"]) @ w["w1"] + w["c1"], approximate=True)
        return h + g @ w["w2"] + w["c2"]

    return block


def jax_stages(p, dtype, variant):
    import jax
    import jax.numpy as jnp

    block = jax_block(p["heads"])
    if variant == "forward":
        return [block]

    def loss(w, x):
        return jnp.mean(block(x, w) ** 2)

    def train(x, w):
        value, grads = jax.value_and_grad(loss)(w, x)
        return value, jax.tree_util.tree_map(lambda a, g: a - LR * g, w, grads)

    return [train]


def tf_block(heads):
    import tensorflow as tf

    def ln(u, g, b):
        mu = tf.reduce_mean(u, -1, keepdims=True)
        var = tf.reduce_mean(tf.square(u - mu), -1, keepdims=True)
        return (u - mu) * tf.math.rsqrt(var + EPS) * g + b

    def split(a):
        shape = tf.shape(a)
        a = tf.reshape(a, (shape[0], shape[1], heads, a.shape[-1] // heads))
        return tf.transpose(a, (0, 2, 1, 3))

    def block(x, w):
        t, dh = x.shape[1], x.shape[2] // heads
        u = ln(x, w["ln1_g"], w["ln1_b"])
        q, k, v = split(u @ w["wq"]), split(u @ w["wk"]), split(u @ w["wv"])
        s = tf.matmul(q, k, transpose_b=True) / math.sqrt(dh)
        causal = tf.linalg.band_part(tf.ones((t, t), tf.bool), -1, 0)
        s = tf.where(causal, s, tf.constant(-math.inf, s.dtype))
        a = tf.transpose(tf.nn.softmax(s, axis=-1) @ v, (0, 2, 1, 3))
        h = x + tf.reshape(a, tf.shape(x)) @ w["wo"]
        g = tf.nn.gelu(ln(h, w["ln2_g"], w["ln2_b"]) @ w["w1"] + w["c1"], approximate=True)
        return h + g @ w["w2"] + w["c2"]

    return block


def tf_stages(p, dtype, variant):
    import tensorflow as tf

    block = tf_block(p["heads"])
    if variant == "forward":
        return [block]

    def train(x, w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            value = tf.reduce_mean(tf.square(block(x, w)))
        grads = tape.gradient(value, w)
        return value, {k: w[k] - LR * grads[k] for k in NAMES}

    return [train]


WORKLOAD = Workload(
    name="transformer",
    description="a pre-LN transformer block (causal multi-head attention, layer norm, GELU "
                "MLP, residuals): forward, and one SGD training step on mean(y²)",
    grid=GRID,
    dtypes=("float32", "bfloat16"),
    variants=("forward", "train"),
    inputs=inputs,
    reference=reference,
    flops=flops,
    reduction=lambda p, variant: 4 * p["model"],  # the MLP's second matmul sums 4·D products
    # float32 sums of up to 4·D products per output, then layer norm and softmax; the training
    # step's parameters move by LR × a gradient summed over B·T positions
    # bfloat16 keeps 8 bits of mantissa (a step of 2^-8 ≈ 0.4%): its outputs err by about 1%
    tolerance={"float32": (2e-3, 2e-3), "bfloat16": (5e-2, 5e-2)},
    tf=tf_stages,
    jax=jax_stages,
    size_label=_size,
    # measured when named (--suite transformer), kept out of make bench's default run to keep
    # that run short
    in_default_run=False,
)
