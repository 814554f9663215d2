#!/usr/bin/env python3
"""A plain JAX training loop on an oxefs mount (README: "Training a
LeRobot policy", the JAX half): one daemon per host, each batch put on
the host's local devices sharded along the batch, frames turned into
floats on the devices.

    python3 examples/jax_train.py MIX.yaml [--steps N] [--cache-dir DIR]

MIX.yaml is a step-mode mix (a sample: block) with at least one camera
slot, a state and an action chunk; its batch_size must divide by the
number of devices over all hosts. The model is a small linear policy (mean-pooled
frames and the state to the chunk), enough to show the loop: L2 over the
chunk, masked by action_is_pad and action_mask. Needs jax and numpy only
(no torch).
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import oxefs


def sharded(batch, sharding):
    """The arrays of one host's batch as global arrays over every device,
    split along the batch: each host gives its own samples (its daemon
    serves its rank), each device gets its share, as uint8 for frames."""
    return {k: jax.make_array_from_process_local_data(sharding, v) for k, v in batch.items() if isinstance(v, np.ndarray)}


def init(key, frames, state_dim, chunk, action_dim):
    width = 3 * len(frames) + state_dim
    return {"w": jax.random.normal(key, (width, chunk * action_dim)) * 0.01, "b": jnp.zeros(chunk * action_dim)}


def loss_fn(params, batch, frames):
    # uint8 → float on the device: the host never converts a pixel.
    feats = [batch[k].astype(jnp.float32).mean(axis=(1, 2, 3)) / 255 for k in frames]  # [B, 3] per slot (BFHWC)
    state = batch["observation.state"][:, -1] * batch["state_mask"]
    x = jnp.concatenate(feats + [state], axis=1)
    pred = (x @ params["w"] + params["b"]).reshape(batch["action"].shape)
    keep = (~batch["action_is_pad"])[:, :, None] & batch["action_mask"][:, None, :]
    err = jnp.where(keep, pred - batch["action"], 0.0)
    return (err**2).sum() / jnp.maximum(keep.sum(), 1)


def train(mnt, steps, lr=0.1, seed=0):
    """Trains for steps batches; returns the losses."""
    info = oxefs.read_info(mnt)
    shapes = {a["name"]: a["shape"] for a in info["sample"]["arrays"]}
    frames = [k for k in shapes if k.startswith("observation.images.") and not k.endswith(("_is_pad", ".augment"))]
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    _, chunk, action_dim = shapes["action"]
    params = init(jax.random.PRNGKey(seed), frames, shapes["observation.state"][-1], chunk, action_dim)

    @jax.jit
    def step(params, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, frames)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    losses = []
    n = len(oxefs.Batches(mnt))
    for epoch in range(steps // n + 1):
        for batch in oxefs.Loader(mnt, epoch=epoch, meta=False):     # numpy; frames mapped, not copied
            if len(losses) == steps:
                return losses
            params, loss = step(params, sharded(batch, sharding))
            losses.append(float(loss))
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mix")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--cache-dir", default=None)
    a = ap.parse_args()
    args = ["--cache-dir", a.cache_dir] if a.cache_dir else []
    # One daemon per host, serving this host's rank of the world.
    with oxefs.mount(a.mix, rank=jax.process_index(), world=jax.process_count(), args=args) as mnt:
        print(f"devices {len(jax.devices())} (local {jax.local_device_count()})")
        for i, loss in enumerate(train(mnt, a.steps)):
            print(f"step {i} loss {loss:.6f}")


if __name__ == "__main__":
    main()
