"""The JAX recipe (examples/jax_train.py) with jax on the CPU, two host
devices forced (XLA_FLAGS), on a real mount of an RLDS fixture in step
mode: each batch is sharded over the devices along the batch as the
mount's bytes (frames still uint8), the loss computed on the devices
equals numpy's over the same arrays, and training runs with finite
losses.

The interpreter is $OXEFS_JAX_PYTHON, else this python where it imports
jax; else the test is skipped as MISSING, naming the variable.
scripts/testdeps.sh makes a venv with jax on the CPU outside the
repository and scripts/test.sh sets OXEFS_JAX_PYTHON to its python, so
that there the skip fails the run.
"""

import os
import subprocess
import sys

import pytest

from mounting import REPO, need_mount

DRIVER = r"""
import sys
import numpy as np
import jax
sys.path.insert(0, sys.argv[2])
import jax_train
import oxefs

with oxefs.mount(sys.argv[1], args=["--cache-dir", sys.argv[3]]) as mnt:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    assert len(jax.devices()) == 2, jax.devices()
    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), PartitionSpec("data"))
    host = next(iter(oxefs.Loader(mnt, meta=False)))
    dev = jax_train.sharded(host, sharding)
    frames = [k for k in dev if k.startswith("observation.images.") and not k.endswith("_is_pad")]
    for k, v in dev.items():
        # frames stay uint8; int64 is int32 without jax_enable_x64
        assert v.dtype == jax.dtypes.canonicalize_dtype(host[k].dtype), (k, v.dtype, host[k].dtype)
        shards = sorted(v.addressable_shards, key=lambda s: s.index[0].start or 0)
        assert len(shards) == 2
        half = host[k].shape[0] // 2
        for i, s in enumerate(shards):
            assert np.array_equal(np.asarray(s.data), host[k][i * half:(i + 1) * half]), k
    shapes = {k: v.shape for k, v in host.items()}
    params = jax_train.init(jax.random.PRNGKey(0), frames, shapes["observation.state"][-1], *shapes["action"][1:])
    got = float(jax_train.loss_fn(params, dev, frames))
    # numpy, on the host arrays
    feats = [host[k].astype(np.float64).mean(axis=(1, 2, 3)) / 255 for k in frames]
    x = np.concatenate(feats + [host["observation.state"][:, -1] * host["state_mask"]], axis=1)
    pred = (x @ np.asarray(params["w"], np.float64) + np.asarray(params["b"])).reshape(host["action"].shape)
    keep = (~host["action_is_pad"])[:, :, None] & host["action_mask"][:, None, :]
    want = float((np.where(keep, pred - host["action"], 0) ** 2).sum() / max(keep.sum(), 1))
    assert abs(got - want) <= 1e-4 * max(1, abs(want)), (got, want)
    losses = jax_train.train(mnt, 4)
    assert len(losses) == 4 and all(np.isfinite(losses)), losses
    print("ok", got, losses)
"""


def _jax_python():
    p = os.environ.get("OXEFS_JAX_PYTHON")
    if p:
        r = subprocess.run([p, "-c", "import jax"], capture_output=True, text=True)
        assert r.returncode == 0, f"OXEFS_JAX_PYTHON={p} does not import jax: {r.stderr.strip()}"
        return p
    if subprocess.run([sys.executable, "-c", "import jax"], capture_output=True).returncode == 0:
        return sys.executable
    pytest.skip("MISSING jax: OXEFS_JAX_PYTHON is not set and this python has no jax "
                "(./scripts/testdeps.sh makes a venv with jax on the CPU; "
                "OXEFS_JAX_PYTHON=$(./scripts/testdeps.sh --jax-python) names its python)")


def test_jax_recipe(tmp_path):
    python = _jax_python()
    exe = need_mount()
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(f"""batch_size: 4
samples_per_episode: 0
sample:
  cameras: {{primary: {{size: [48, 64]}}}}
  action: {{steps: "0:5"}}
datasets:
  - name: bridge
    source: {REPO}/testdata/datasets/tiny_bridge/1.0.0
    split: train
    cameras: {{primary: steps/observation/image}}
    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]
    state_key: steps/observation/state
""")
    env = dict(os.environ, OXEFS_BIN=exe, PYTHONPATH=os.path.join(REPO, "python"),
               XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    r = subprocess.run([python, "-c", DRIVER, str(cfg), os.path.join(REPO, "examples"), str(tmp_path / "cache")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok"), r.stdout
