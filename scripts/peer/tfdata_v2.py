"""tf.data doing oxefs's all-pairs work, in tf.data's best shape: the peer
that `scripts/peer.sh` measures oxefs against.

    python tfdata_v2.py MIX.yaml [--warmup 10] [--batches 40] [--json]

It reads the datasets of an oxefs mix config (the TFDS directories that
`oxefs synth` writes) and builds what oxefs builds with
`samples_per_episode: 0`: every valid pair (t, t+offset) of every episode is
a sample, holding the frames at t and t+offset resized to the mix's
image_size (tf.image.resize, bilinear, no antialias, truncated to uint8:
the pixels oxefs reproduces), the actions summed over [t, t+offset), the
state at t and the language. The pipeline:

    per dataset: the split's shards (shuffled) -> TFRecordDataset ->
                 map(parse only the keys used; one episode -> its pairs,
                     frames still encoded) -> unbatch -> repeat
    sample_from_datasets(weights of the mix) -> shuffle(500) -> batch(B)
      -> map(decode JPEG/PNG, resize, cast; num_parallel_calls=AUTOTUNE)
      -> prefetch(AUTOTUNE)

(`--decode-first` decodes each sample before batch(B) instead; `--pairs
one` keeps one pair per episode visit, t uniform over the valid starts: the
work of `samples_per_episode: 1`.) After
--warmup batches it measures --batches more, touching one byte per page of
every batch's frames, and reports samples/s and the CPU time of the whole
process (getrusage, self and children) per sample.

TensorFlow, tensorflow_datasets and PyYAML are needed; without them it says
so and exits 0 (nothing in CI depends on TensorFlow).
"""
import argparse
import fractions
import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def cpu_seconds():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def weight(w, name):
    try:
        return float(fractions.Fraction(str(w)))
    except (ValueError, ZeroDivisionError):
        sys.exit(f"dataset {name}: weight {w!r}: this harness takes numbers (1.0, 3/4), not 'proportionate'")


def feature(features, key, name):
    """The TFDS feature at a '/'-separated key, stepping into 'steps'."""
    f = features
    for part in key.split("/"):
        if hasattr(f, "feature") and not hasattr(f, "keys"):  # a Dataset (steps): its per-step dict
            f = f.feature
        try:
            f = f[part]
        except (KeyError, TypeError):
            sys.exit(f"dataset {name}: no feature {key!r}")
    return f


class Dataset:
    """One dataset of the mix: where its split's records are and how to
    turn an episode into its pairs."""

    def __init__(self, d, width, state_width):
        import tensorflow as tf
        import tensorflow_datasets as tfds

        self.name = d.get("name") or os.path.basename(os.path.dirname(d["source"].rstrip("/")))
        off = d.get("offset", 1)
        if not isinstance(off, int):
            sys.exit(f"dataset {self.name}: offset {off!r}: this harness takes one int offset per dataset, not a range")
        self.offset = off
        b = tfds.builder_from_directory(d["source"])
        self.builder = b
        split = d.get("split", "train")
        self.files = [(str(fi.filename), fi.skip, fi.take) for fi in b.info.splits[split].file_instructions]
        feats = b.info.features
        self.image_key = d.get("image_key")
        if not self.image_key:
            sys.exit(f"dataset {self.name}: give image_key (this harness does not guess the camera)")
        self.action_keys = d.get("action_keys") or []
        self.state_key = d.get("state_key")
        self.language_key = d.get("language_key")
        self.width, self.state_width = width, state_width
        # The parse spec: only the keys a sample uses, one tensor per key.
        spec, self.shapes = {}, {}
        for k in [self.image_key, *self.action_keys] + [x for x in (self.state_key, self.language_key) if x]:
            f = feature(feats, k, self.name)
            if k == self.image_key or f.tf_dtype == tf.string:
                dtype, shape = tf.string, ()
            else:
                dtype = tf.float32 if f.tf_dtype.is_floating else tf.int64
                shape = tuple(f.shape)
            self.shapes[k] = (dtype, shape)
            if k.startswith("steps/"):
                spec[k] = tf.io.FixedLenSequenceFeature(shape, dtype, allow_missing=True)
            else:
                spec[k] = tf.io.FixedLenFeature(shape, dtype)
        self.spec = spec

    def text(self, x):
        """A language feature as a UTF-8 string: text, or code points
        (zeros dropped)."""
        import tensorflow as tf

        if x.dtype == tf.string:
            return x
        codes = tf.cast(x, tf.int32)
        return tf.strings.unicode_encode(tf.boolean_mask(codes, codes > 0), "UTF-8")

    def pairs(self, record):
        """One serialised episode -> its pairs, a dict of tensors with a
        leading dimension of L - offset (maybe 0)."""
        import tensorflow as tf

        ex = tf.io.parse_single_example(record, self.spec)
        frames = ex[self.image_key]
        n = tf.maximum(tf.shape(frames)[0] - self.offset, 0)
        out = {"frames": tf.stack([frames[:n], frames[self.offset:self.offset + n]], axis=1)}
        if self.action_keys:
            acts = tf.concat([tf.reshape(tf.cast(ex[k], tf.float32), [tf.shape(frames)[0], -1]) for k in self.action_keys], axis=1)
            # rows t .. t+offset-1 summed, for every t < n
            win = tf.signal.frame(acts, self.offset, 1, pad_end=False, axis=0)[:n] if self.offset > 0 else tf.zeros([n, 0, tf.shape(acts)[1]])
            summed = tf.reduce_sum(win, axis=1)
            out["actions"] = tf.pad(summed, [[0, 0], [0, self.width - tf.shape(summed)[1]]])
        else:
            out["actions"] = tf.zeros([n, self.width])
        if self.state_key:
            st = tf.reshape(tf.cast(ex[self.state_key], tf.float32), [tf.shape(frames)[0], -1])[:n]
            out["state"] = tf.pad(st, [[0, 0], [0, self.state_width - tf.shape(st)[1]]])
        else:
            out["state"] = tf.zeros([n, self.state_width])
        if self.language_key:
            lang = ex[self.language_key]
            if self.language_key.startswith("steps/"):
                if lang.dtype == tf.string:
                    out["language"] = lang[:n]
                else:
                    out["language"] = tf.map_fn(self.text, lang[:n], fn_output_signature=tf.string)
            else:
                out["language"] = tf.fill([n], self.text(lang))
        else:
            out["language"] = tf.fill([n], "")
        out["dataset"] = tf.fill([n], self.name)
        return out

    def dataset(self, seed, one):
        """The dataset's samples, endlessly: every pair of every episode,
        or with one, one random pair per episode visit."""
        import tensorflow as tf

        files = tf.data.Dataset.from_tensor_slices(
            ([f for f, _, _ in self.files], tf.constant([s for _, s, _ in self.files], tf.int64),
             tf.constant([t for _, _, t in self.files], tf.int64)))
        files = files.shuffle(len(self.files), seed=seed, reshuffle_each_iteration=True)
        episodes = files.interleave(lambda f, skip, take: tf.data.TFRecordDataset(f).skip(skip).take(take),
                                    cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        pairs = episodes.map(self.pairs, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        if one:
            def pick(p):  # episodes with no valid pair give none
                n = tf.shape(p["frames"])[0]
                t = tf.random.uniform([], 0, tf.maximum(n, 1), dtype=tf.int32)
                return {k: v[t:t + tf.minimum(n, 1)] for k, v in p.items()}
            pairs = pairs.map(pick, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        return pairs.unbatch().repeat()


def widths(datasets_cfg):
    """The mix's widest action (summed keys concatenated) and state."""
    import tensorflow_datasets as tfds

    aw, sw = 0, 0
    for d in datasets_cfg:
        feats = tfds.builder_from_directory(d["source"]).info.features
        name = d.get("name", d["source"])
        a = 0
        for k in d.get("action_keys") or []:
            shape = feature(feats, k, name).shape
            n = 1
            for x in shape:
                n *= x
            a += n
        aw = max(aw, a)
        if d.get("state_key"):
            n = 1
            for x in feature(feats, d["state_key"], name).shape:
                n *= x
            sw = max(sw, n)
    return aw, sw


def build(cfg, decode_first, one, seed):
    import tensorflow as tf

    h, w = cfg.get("image_size", [256, 256])
    bsz = cfg.get("batch_size", 64)
    aw, sw = widths(cfg["datasets"])
    ds, ws = [], []
    for d in cfg["datasets"]:
        wt = weight(d.get("weight", 1), d.get("name", d["source"]))
        if wt <= 0:
            continue
        ds.append(Dataset(d, aw, sw).dataset(seed, one))
        ws.append(wt)
    total = sum(ws)

    def frame(s):
        img = tf.io.decode_image(s, channels=3, expand_animations=False)
        return tf.cast(tf.image.resize(img, [h, w], method="bilinear", antialias=False), tf.uint8)

    def decode_one(x):  # one sample: its 2 frames
        x = dict(x)
        x["frames"] = tf.map_fn(frame, x["frames"], fn_output_signature=tf.TensorSpec([h, w, 3], tf.uint8))
        return x

    def decode_batch(x):  # a batch: its B×2 frames
        x = dict(x)
        flat = tf.reshape(x["frames"], [-1])
        img = tf.map_fn(frame, flat, fn_output_signature=tf.TensorSpec([h, w, 3], tf.uint8))
        x["frames"] = tf.reshape(img, [-1, 2, h, w, 3])
        return x

    mix = tf.data.Dataset.sample_from_datasets(ds, weights=[x / total for x in ws], seed=seed)
    mix = mix.shuffle(500, seed=seed)
    if decode_first:
        mix = mix.map(decode_one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False).batch(bsz)
    else:
        mix = mix.batch(bsz).map(decode_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    return mix.prefetch(tf.data.AUTOTUNE), bsz


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="oxefs mix config (YAML); its samples_per_episode is ignored (--pairs says which pairs are samples)")
    ap.add_argument("--warmup", type=int, default=10, help="batches read first, not measured")
    ap.add_argument("--batches", type=int, default=40, help="batches measured")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--decode-first", action="store_true", help="decode each sample before batch() instead of after")
    ap.add_argument("--pairs", choices=["all", "one"], default="all",
                    help="all: every pair of every episode (samples_per_episode: 0); one: one random pair per episode visit (samples_per_episode: 1)")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = ap.parse_args()
    try:
        import numpy  # noqa: F401
        import tensorflow as tf
        import tensorflow_datasets  # noqa: F401
        import yaml
    except ImportError as e:
        print(f"tfdata_v2.py: {e.name} is not installed: nothing measured (pip install tensorflow tensorflow-datasets pyyaml)")
        return 0
    with open(a.config) as f:
        cfg = yaml.safe_load(f)
    if cfg.get("pair_frames", "endpoints") != "endpoints" or cfg.get("resize", "squash") != "squash" or cfg.get("layout", "BFHWC") != "BFHWC":
        sys.exit(f"{a.config}: this harness builds pair_frames: endpoints, resize: squash, layout: BFHWC only")
    ds, bsz = build(cfg, a.decode_first, a.pairs == "one", a.seed)
    it = iter(ds)

    def read(n):
        for _ in range(n):
            b = next(it)
            b["frames"].numpy().reshape(-1)[::4096].sum()  # one byte per page: every page read

    read(a.warmup)
    c0, t0 = cpu_seconds(), time.monotonic()
    read(a.batches)
    c1, t1 = cpu_seconds(), time.monotonic()
    n = a.batches * bsz
    res = {
        "peer": "tf.data v2" + (" (decode before batch)" if a.decode_first else ""), "pairs": a.pairs,
        "tensorflow": tf.__version__, "batch_size": bsz, "warmup": a.warmup, "batches": a.batches,
        "samples_per_s": n / (t1 - t0), "cpu_ms_per_sample": (c1 - c0) * 1e3 / n, "cores": os.cpu_count(),
    }
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{res['peer']}: {res['samples_per_s']:.1f} samples/s, {res['cpu_ms_per_sample']:.2f} CPU ms/sample "
              f"({a.batches} batches of {bsz} after {a.warmup})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
