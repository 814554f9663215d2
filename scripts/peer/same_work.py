"""Checks that the tf.data peer computes what oxefs serves: for every sample
of some oxefs batches, the same episode's pair through tfdata_v2.py's
parsing and decode must give the same frames (bit for bit), summed actions
and state (to float32 rounding) and language.

    python same_work.py MIX.yaml --binary OXEFS --cache-dir DIR [--batches 2]

MIX may have any samples_per_episode: each of oxefs's samples is compared
with the peer's pair at its t (scripts/peer.sh writes MIX). Prints
one line per dataset seen and exits 1 on any difference. Needs what
tfdata_v2.py needs, plus numpy; without TensorFlow it says so and exits 0.
"""
import argparse
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--binary", required=True)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--batches", type=int, default=2)
    a = ap.parse_args()
    try:
        import numpy as np
        import tensorflow as tf
        import yaml
    except ImportError as e:
        print(f"same_work.py: {e.name} is not installed: nothing checked")
        return 0
    import oxefs
    import tfdata_v2

    with open(a.config) as f:
        cfg = yaml.safe_load(f)
    h, w = cfg.get("image_size", [256, 256])
    aw, sw = tfdata_v2.widths(cfg["datasets"])
    by_name = {}
    for d in cfg["datasets"]:
        ds = tfdata_v2.Dataset(d, aw, sw)
        by_name[ds.name] = ds
    episodes = {}  # (name, shard, record) -> the peer's pairs of that episode

    def peer_pairs(name, split, shard, record):
        key = (name, split, shard, record)
        if key not in episodes:
            ds = by_name[name]
            path = str(ds.builder.info.splits[split].filepaths[shard])
            rec = next(iter(tf.data.TFRecordDataset(path).skip(record).take(1)))
            episodes[key] = {k: v.numpy() for k, v in ds.pairs(rec).items()}
        return episodes[key]

    bad, seen = 0, {}
    with oxefs.mount(a.config, args=["--cache-dir", a.cache_dir], binary=a.binary) as m:
        for i in range(a.batches):
            b = oxefs.Batches(m).read(i)
            for j in range(len(b["episode_id"])):
                name, split, shard, record = b["episode_id"][j].rsplit("/", 3)
                t = int(b["frame_idx"][j])
                p = peer_pairs(name, split, int(shard), int(record))
                frames = np.stack([
                    tf.cast(tf.image.resize(tf.io.decode_image(s, channels=3, expand_animations=False), [h, w],
                                            method="bilinear", antialias=False), tf.uint8).numpy()
                    for s in p["frames"][t]])
                problems = []
                if not np.array_equal(frames, b["frames"][j]):
                    problems.append(f"frames differ in {np.count_nonzero(frames != b['frames'][j])} values")
                if not np.allclose(p["actions"][t], b["action"][j], rtol=1e-5, atol=1e-5):
                    problems.append(f"actions {p['actions'][t]} != {b['action'][j]}")
                if not np.allclose(p["state"][t], b["initial_state"][j], rtol=1e-6, atol=1e-6):
                    problems.append(f"state {p['state'][t]} != {b['initial_state'][j]}")
                if p["language"][t].decode() != b["language"][j]:
                    problems.append(f"language {p['language'][t]!r} != {b['language'][j]!r}")
                seen[name] = seen.get(name, 0) + 1
                if problems:
                    bad += 1
                    print(f"batch {i} sample {j} ({b['episode_id'][j]} t={t}): " + "; ".join(problems))
    for name, n in sorted(seen.items()):
        print(f"{name}: {n} samples compared")
    print(f"{sum(seen.values())} samples from {len(seen)} datasets, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
