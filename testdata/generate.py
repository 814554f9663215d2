#!/usr/bin/env python3
"""Regenerates the oxefs test fixtures under testdata/.

How to run (from the repository root):

    python3 testdata/generate.py

Needs Python 3.10+ with `tensorflow` (or `tensorflow-cpu`),
`tensorflow-datasets` and `numpy` (pip install tensorflow-cpu
tensorflow-datasets numpy).  It runs offline in about a minute.

CI never runs this script: TensorFlow is not available there.  Its outputs
are committed and the Go tests read them as they are.  Re-running it with the
same library versions rewrites byte-identical files (fixed seeds, fixed
keys, no timestamps); see testdata/README.md.

What it writes (everything it owns is deleted first, then rebuilt):

  datasets/<name>/<version>/   three tiny RLDS datasets written by
                               tensorflow_datasets itself (GeneratorBasedBuilder
                               + download_and_prepare, file_format=tfrecord):
                               tiny_bridge, tiny_table, tiny_kuka.
  manifest.json                ground truth read back through TensorFlow:
                               every record of every shard in file order, and
                               how TFDS resolves a list of split strings.
  expected_frames/             decoded frames and tf.image.resize references
                               (.npy, uint8 HxWx3) plus index.json.
  corrupt/<variant>/           copies of tiny_table with one defect each, plus
                               corrupt/index.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import sys
import tempfile
from unittest import mock

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TFDS serializes each tf.train.Example with SerializeToString(), whose order
# of `features.feature` map entries is not fixed: the default upb protobuf
# runtime walks a hash table seeded per process, so shards differ byte-wise
# from run to run.  The pure-Python runtime writes map entries in insertion
# order (the order TFDS adds the flattened keys), which makes the shards
# reproducible.  It must be chosen before protobuf is first imported.
os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402
from tensorflow_datasets.core import split_builder as tfds_split_builder  # noqa: E402
from tensorflow_datasets.core.utils import shard_utils as tfds_shard_utils  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "datasets")
FRAMES_DIR = os.path.join(HERE, "expected_frames")
CORRUPT_DIR = os.path.join(HERE, "corrupt")
MANIFEST = os.path.join(HERE, "manifest.json")

RLDS_SCALARS = ("is_first", "is_last", "is_terminal", "reward", "discount")


# --------------------------------------------------------------------------
# Synthetic, photo-like content.
# --------------------------------------------------------------------------


def _rng(*parts: int) -> np.random.Generator:
    """A generator seeded from a tuple of small non-negative ints."""
    return np.random.default_rng(list(parts))


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


class Scene:
    """A smooth background with a few soft-edged shapes that drift per step."""

    def __init__(self, seed: tuple[int, ...], noise_sigma: float):
        r = _rng(*seed)
        self.seed = seed
        self.noise_sigma = noise_sigma
        self.top = r.uniform(40, 220, size=3)
        self.bottom = r.uniform(20, 200, size=3)
        self.tint = r.uniform(-50, 50, size=3)
        self.wave_freq = r.uniform(0.6, 2.2, size=2)
        self.wave_phase = r.uniform(0, 2 * np.pi)
        self.wave_amp = r.uniform(6, 18)
        self.shapes = []
        for _ in range(int(r.integers(2, 5))):
            self.shapes.append(
                dict(
                    kind=str(r.choice(["disc", "box", "ellipse"])),
                    cx=r.uniform(0.15, 0.85),
                    cy=r.uniform(0.15, 0.85),
                    vx=r.uniform(-0.04, 0.04),
                    vy=r.uniform(-0.03, 0.03),
                    size=r.uniform(0.08, 0.22),
                    aspect=r.uniform(0.5, 1.6),
                    colour=r.uniform(0, 255, size=3),
                    edge=r.uniform(0.01, 0.04),
                )
            )

    def render(self, h: int, w: int, step: int) -> np.ndarray:
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        y = (y + 0.5) / h
        x = (x + 0.5) / w
        t = y[..., None]
        img = self.top * (1.0 - t) + self.bottom * t
        img = img + self.tint * (x[..., None] - 0.5)
        wave = np.sin(
            2 * np.pi * (self.wave_freq[0] * x + self.wave_freq[1] * y)
            + self.wave_phase
            + 0.3 * step
        )
        img = img + self.wave_amp * wave[..., None]
        for s in self.shapes:
            cx = s["cx"] + s["vx"] * step
            cy = s["cy"] + s["vy"] * step
            dx = (x - cx) * (w / max(h, w))
            dy = (y - cy) * (h / max(h, w))
            if s["kind"] == "disc":
                d = np.sqrt(dx * dx + dy * dy) / s["size"]
            elif s["kind"] == "ellipse":
                d = np.sqrt((dx / s["aspect"]) ** 2 + (dy * s["aspect"]) ** 2)
                d = d / s["size"]
            else:
                d = np.maximum(np.abs(dx) / s["aspect"], np.abs(dy)) / s["size"]
            inside = 1.0 - _smoothstep((d - 1.0) / (s["edge"] / s["size"]) + 0.5)
            shade = 1.0 - 0.35 * np.clip(d, 0.0, 1.0) ** 2  # a soft highlight
            fill = s["colour"] * shade[..., None]
            img = img * (1.0 - inside[..., None]) + fill * inside[..., None]
        noise = _rng(*self.seed, 7919, step).normal(0.0, self.noise_sigma, img.shape)
        return np.clip(np.rint(img + noise), 0, 255).astype(np.uint8)


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _rlds_flags(n: int, terminal: bool) -> dict[str, list]:
    is_last = [i == n - 1 for i in range(n)]
    return dict(
        is_first=[i == 0 for i in range(n)],
        is_last=is_last,
        is_terminal=[terminal and last for last in is_last],
        reward=[np.float32(1.0 if (terminal and last) else 0.0) for last in is_last],
        discount=[np.float32(0.0 if (terminal and last) else 1.0) for last in is_last],
    )


def _scalar_features() -> dict:
    return dict(
        is_first=tfds.features.Scalar(dtype=np.bool_),
        is_last=tfds.features.Scalar(dtype=np.bool_),
        is_terminal=tfds.features.Scalar(dtype=np.bool_),
        reward=tfds.features.Scalar(dtype=np.float32),
        discount=tfds.features.Scalar(dtype=np.float32),
    )


# --------------------------------------------------------------------------
# Builders.
# --------------------------------------------------------------------------


class _FixtureBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Common part: per-split shard counts and deterministic episodes."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Test fixture for oxefs."}
    # split name -> (number of episodes, number of shards, first episode id)
    SPLITS: dict[str, tuple[int, int, int]] = {}
    SEED = 0

    def _generate_splits(self, dl_manager, download_config):
        # DownloadConfig(num_shards=...) applies one count to every split; we
        # want a different count per split, so set it just before each split
        # is written (the non-Beam writer reads it at that moment).
        original = tfds_split_builder.SplitBuilder.submit_split_generation
        splits = self.SPLITS

        def submit(split_builder, *args, split_name, **kwargs):
            split_builder._shard_config = tfds_shard_utils.ShardConfig(
                num_shards=splits[split_name][1]
            )
            return original(split_builder, *args, split_name=split_name, **kwargs)

        with mock.patch.object(
            tfds_split_builder.SplitBuilder, "submit_split_generation", submit
        ):
            return super()._generate_splits(dl_manager, download_config)

    def _split_generators(self, dl_manager):
        del dl_manager
        return {name: self._generate_examples(name) for name in self.SPLITS}

    def _generate_examples(self, split):
        count, _, first_id = self.SPLITS[split]
        split_no = list(self.SPLITS).index(split)
        for i in range(count):
            r = _rng(self.SEED, split_no, i)
            n = int(r.integers(4, 15))  # 4..14 steps
            episode = self._episode(r, split, split_no, i, first_id + i, n)
            yield f"{split}-{i:04d}", episode


BRIDGE_TEXTS = [
    "put the carrot in the pot",
    "open the microwave door",
    "move the red spoon to the left burner",
    "flip the pot upright",
    "put the crème brûlée on the plate",  # non-ASCII on purpose
    "",  # some real Bridge episodes carry no instruction
    "pick up the green cloth and fold it",
    "place the eggplant in the sink",
]


class TinyBridge(_FixtureBuilder):
    """Bridge-like: two JPEG cameras, dict action, per-step Text language."""

    SPLITS = {"train": (24, 3, 1000), "val": (6, 2, 2000)}
    SEED = 11

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            description="Tiny Bridge-like RLDS fixture for oxefs tests.",
            features=tfds.features.FeaturesDict(
                {
                    "steps": tfds.features.Dataset(
                        {
                            "observation": tfds.features.FeaturesDict(
                                {
                                    "image": tfds.features.Image(
                                        shape=(96, 128, 3),
                                        dtype=np.uint8,
                                        encoding_format="jpeg",
                                    ),
                                    "wrist_image": tfds.features.Image(
                                        shape=(64, 64, 3),
                                        dtype=np.uint8,
                                        encoding_format="jpeg",
                                    ),
                                    "state": tfds.features.Tensor(
                                        shape=(7,), dtype=np.float32
                                    ),
                                }
                            ),
                            "action": tfds.features.FeaturesDict(
                                {
                                    "world_vector": tfds.features.Tensor(
                                        shape=(3,), dtype=np.float32
                                    ),
                                    "rotation_delta": tfds.features.Tensor(
                                        shape=(3,), dtype=np.float32
                                    ),
                                    "gripper_closedness_action": tfds.features.Tensor(
                                        shape=(1,), dtype=np.float32
                                    ),
                                }
                            ),
                            "language_instruction": tfds.features.Text(),
                            **_scalar_features(),
                        }
                    ),
                    "episode_metadata": tfds.features.FeaturesDict(
                        {
                            "episode_id": tfds.features.Scalar(dtype=np.int64),
                            "file_path": tfds.features.Text(),
                        }
                    ),
                }
            ),
        )

    def _episode(self, r, split, split_no, i, episode_id, n):
        text = BRIDGE_TEXTS[int(r.integers(0, len(BRIDGE_TEXTS)))]
        if split == "train" and i == 5:
            text = ""  # guarantee at least one empty instruction
        if split == "train" and i == 6:
            text = BRIDGE_TEXTS[4]  # and one non-ASCII one
        terminal = bool(r.integers(0, 4) != 0)
        scene = Scene((self.SEED, split_no, i, 1), noise_sigma=1.5)
        wrist = Scene((self.SEED, split_no, i, 2), noise_sigma=1.5)
        state = r.normal(0.0, 0.3, size=7)
        steps = []
        flags = _rlds_flags(n, terminal)
        for t in range(n):
            wv = r.normal(0.0, 0.02, size=3)
            rd = r.normal(0.0, 0.08, size=3)
            grip = r.uniform(-1.0, 1.0, size=1)
            steps.append(
                {
                    "observation": {
                        "image": scene.render(96, 128, t),
                        "wrist_image": wrist.render(64, 64, t),
                        "state": _f32(state),
                    },
                    "action": {
                        "world_vector": _f32(wv),
                        "rotation_delta": _f32(rd),
                        "gripper_closedness_action": _f32(grip),
                    },
                    "language_instruction": text,
                    **{k: v[t] for k, v in flags.items()},
                }
            )
            state = state + np.concatenate([wv, rd, grip * 0.1])
        return {
            "steps": steps,
            "episode_metadata": {
                "episode_id": np.int64(episode_id),
                "file_path": f"/raw/bridge/{split}/traj{i:04d}/episode.npz",
            },
        }


TABLE_TEXTS = [
    "push the red star to the top left corner",
    "move the blue cube next to the yellow heart",
    "slide the green circle toward the center",
    "push the café sign block slightly down",  # non-ASCII code point
    # exactly 64 code points: no terminating zero in the int32[64] tensor
    "separate the red pentagon from the blue moon and the yellow star",
    "nudge the yellow heart left",
]
TABLE_LEN = 64


def encode_codepoints(text: str) -> np.ndarray:
    cps = [ord(c) for c in text]
    assert len(cps) <= TABLE_LEN, text
    return np.array(cps + [0] * (TABLE_LEN - len(cps)), dtype=np.int32)


def decode_codepoints(arr) -> str:
    return "".join(chr(int(c)) for c in arr if int(c) != 0)


assert len(TABLE_TEXTS[4]) == TABLE_LEN


class TinyTable(_FixtureBuilder):
    """language_table-like: PNG camera, int32 code-point instruction."""

    SPLITS = {"train": (10, 2, 3000)}
    SEED = 22

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            description="Tiny Language-Table-like RLDS fixture for oxefs tests.",
            features=tfds.features.FeaturesDict(
                {
                    "steps": tfds.features.Dataset(
                        {
                            "observation": tfds.features.FeaturesDict(
                                {
                                    "rgb": tfds.features.Image(
                                        shape=(40, 72, 3),
                                        dtype=np.uint8,
                                        encoding_format="png",
                                    ),
                                    "instruction": tfds.features.Tensor(
                                        shape=(TABLE_LEN,), dtype=np.int32
                                    ),
                                    "effector_translation": tfds.features.Tensor(
                                        shape=(2,), dtype=np.float32
                                    ),
                                }
                            ),
                            "action": tfds.features.Tensor(
                                shape=(2,), dtype=np.float32
                            ),
                            **_scalar_features(),
                        }
                    ),
                    "episode_metadata": tfds.features.FeaturesDict(
                        {"episode_id": tfds.features.Scalar(dtype=np.int64)}
                    ),
                }
            ),
        )

    def _episode(self, r, split, split_no, i, episode_id, n):
        text = TABLE_TEXTS[i % len(TABLE_TEXTS)]
        codes = encode_codepoints(text)
        terminal = bool(r.integers(0, 3) != 0)
        scene = Scene((self.SEED, split_no, i, 1), noise_sigma=0.6)
        pos = r.uniform(-0.3, 0.3, size=2)
        flags = _rlds_flags(n, terminal)
        steps = []
        for t in range(n):
            act = r.normal(0.0, 0.03, size=2)
            steps.append(
                {
                    "observation": {
                        "rgb": scene.render(40, 72, t),
                        "instruction": codes,
                        "effector_translation": _f32(pos),
                    },
                    "action": _f32(act),
                    **{k: v[t] for k, v in flags.items()},
                }
            )
            pos = pos + act
        return {
            "steps": steps,
            "episode_metadata": {"episode_id": np.int64(episode_id)},
        }


KUKA_TEXTS = [
    "pick anything",
    "grasp the object from the bin",
    "lift the small toy",
]


class TinyKuka(_FixtureBuilder):
    """kuka-like: JPEG camera, float64 action, zlib/bytes tensors."""

    SPLITS = {"train": (8, 2, 4000), "test": (3, 1, 5000)}
    SEED = 33

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            description="Tiny Kuka-like RLDS fixture for oxefs tests.",
            features=tfds.features.FeaturesDict(
                {
                    "steps": tfds.features.Dataset(
                        {
                            "observation": tfds.features.FeaturesDict(
                                {
                                    "image": tfds.features.Image(
                                        shape=(120, 160, 3),
                                        dtype=np.uint8,
                                        encoding_format="jpeg",
                                    ),
                                    "depth": tfds.features.Tensor(
                                        shape=(16, 16),
                                        dtype=np.float32,
                                        encoding=tfds.features.Encoding.ZLIB,
                                    ),
                                    "joint_bytes": tfds.features.Tensor(
                                        shape=(4,),
                                        dtype=np.float32,
                                        encoding=tfds.features.Encoding.BYTES,
                                    ),
                                }
                            ),
                            "action": tfds.features.Tensor(
                                shape=(7,), dtype=np.float64
                            ),
                            **_scalar_features(),
                        }
                    ),
                    "episode_metadata": tfds.features.FeaturesDict(
                        {
                            "episode_id": tfds.features.Scalar(dtype=np.int64),
                            "language_instruction": tfds.features.Text(),
                        }
                    ),
                }
            ),
        )

    def _episode(self, r, split, split_no, i, episode_id, n):
        text = KUKA_TEXTS[int(r.integers(0, len(KUKA_TEXTS)))]
        terminal = bool(r.integers(0, 3) != 0)
        scene = Scene((self.SEED, split_no, i, 1), noise_sigma=2.5)
        joints = r.uniform(-1.5, 1.5, size=4)
        yy, xx = np.mgrid[0:16, 0:16] / 15.0
        depth_base = 0.6 + 0.3 * yy + r.uniform(-0.1, 0.1) * xx
        flags = _rlds_flags(n, terminal)
        steps = []
        for t in range(n):
            # float64 with more precision than float32 can hold, on purpose.
            act = r.normal(0.0, 0.1, size=7)
            act[6] = float(r.integers(0, 2))  # gripper open/close
            depth = depth_base + 0.05 * np.sin(xx * 3.0 + t * 0.4)
            steps.append(
                {
                    "observation": {
                        "image": scene.render(120, 160, t),
                        "depth": _f32(depth),
                        "joint_bytes": _f32(joints),
                    },
                    "action": np.asarray(act, dtype=np.float64),
                    **{k: v[t] for k, v in flags.items()},
                }
            )
            joints = joints + r.normal(0.0, 0.05, size=4)
        return {
            "steps": steps,
            "episode_metadata": {
                "episode_id": np.int64(episode_id),
                "language_instruction": text,
            },
        }


BUILDERS = [TinyBridge, TinyTable, TinyKuka]


# --------------------------------------------------------------------------
# Helpers for reading back.
# --------------------------------------------------------------------------


def rel(path: str) -> str:
    return os.path.relpath(path, HERE).replace(os.sep, "/")


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def record_spans(path: str) -> list[tuple[int, int]]:
    """(offset of the record's 12-byte header, payload length) per record."""
    spans = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        spans.append((pos, length))
        pos += 8 + 4 + length + 4
    assert pos == len(data), path
    return spans


def floats(a) -> list:
    """JSON-safe list; float32 values keep their exact value as a double."""
    return np.asarray(a).astype(np.float64).tolist()


def clean_message(msg: str) -> str:
    """First line of an error, without paths and TF's op-call decorations."""
    msg = msg.replace(HERE + os.sep, "").replace(HERE, "testdata").strip()
    msg = msg.splitlines()[0] if msg else msg
    msg = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", msg)
    msg = re.sub(r"\s*\[Op:[^\]]*\].*$", "", msg)
    return msg.strip()


def as_text(v) -> str:
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def example_key_summary(raw: bytes) -> list[dict]:
    """How the record's tf.train.Example stores each flattened key."""
    ex = tf.train.Example.FromString(raw)
    out = []
    for key in sorted(ex.features.feature):
        feat = ex.features.feature[key]
        kind = feat.WhichOneof("kind")
        values = getattr(feat, kind).value
        entry = {"key": key, "kind": kind, "num_values": len(values)}
        if kind == "bytes_list" and len(values):
            entry["first_value_bytes"] = len(values[0])
        out.append(entry)
    return out


# --------------------------------------------------------------------------
# Generation.
# --------------------------------------------------------------------------


def build(builder_cls, download_dir: str):
    builder = builder_cls(data_dir=DATA_DIR, file_format="tfrecord")
    builder.download_and_prepare(
        download_dir=download_dir,
        download_config=tfds.download.DownloadConfig(
            download_mode=tfds.download.GenerateMode.REUSE_DATASET_IF_EXISTS,
        ),
    )
    return builder


def tidy_dataset_dir(builder) -> None:
    """Keeps only dataset_info.json, features.json and the shards."""
    name_dir = os.path.join(DATA_DIR, builder.name)
    version_dir = os.path.join(name_dir, str(builder.version))
    for entry in os.listdir(name_dir):
        if entry != str(builder.version):
            p = os.path.join(name_dir, entry)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    shards = set()
    for split in builder.info.splits.values():
        shards.update(split.filenames)
    for entry in os.listdir(version_dir):
        if entry in ("dataset_info.json", "features.json") or entry in shards:
            continue
        p = os.path.join(version_dir, entry)
        print(f"  removing stray {rel(p)}")
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)


def describe_record(name: str, features, raw: bytes) -> dict:
    ex = features.deserialize_example(raw)
    steps = list(tfds.as_numpy(ex["steps"]))
    meta = tfds.as_numpy(ex["episode_metadata"])
    rec = {
        "episode_id": int(meta["episode_id"]),
        "num_steps": len(steps),
    }
    for k in RLDS_SCALARS:
        vals = [s[k] for s in steps]
        rec[k] = [bool(v) for v in vals] if k.startswith("is_") else floats(vals)

    if name == "tiny_bridge":
        rec["language"] = as_text(steps[0]["language_instruction"])
        rec["language_all_steps_equal"] = all(
            as_text(s["language_instruction"]) == rec["language"] for s in steps
        )
        rec["file_path"] = as_text(meta["file_path"])
        rec["action"] = {
            f"steps/action/{k}": floats([s["action"][k] for s in steps])
            for k in ("world_vector", "rotation_delta", "gripper_closedness_action")
        }
        rec["state"] = {
            "steps/observation/state": floats(
                [s["observation"]["state"] for s in steps]
            )
        }
        cams = {"steps/observation/image": "image", "steps/observation/wrist_image": "wrist_image"}
    elif name == "tiny_table":
        codes = steps[0]["observation"]["instruction"]
        rec["language"] = decode_codepoints(codes)
        rec["instruction_codepoints"] = [int(c) for c in codes]
        rec["language_all_steps_equal"] = all(
            np.array_equal(s["observation"]["instruction"], codes) for s in steps
        )
        rec["action"] = {"steps/action": floats([s["action"] for s in steps])}
        rec["state"] = {
            "steps/observation/effector_translation": floats(
                [s["observation"]["effector_translation"] for s in steps]
            )
        }
        cams = {"steps/observation/rgb": "rgb"}
    else:
        rec["language"] = as_text(meta["language_instruction"])
        acts = [s["action"] for s in steps]
        assert acts[0].dtype == np.float64
        rec["action"] = {"steps/action": floats(acts)}
        rec["state"] = {
            "steps/observation/joint_bytes": floats(
                [s["observation"]["joint_bytes"] for s in steps]
            )
        }
        rec["depth"] = {
            "shape": list(steps[0]["observation"]["depth"].shape),
            "sha256_float32le_per_step": [
                hashlib.sha256(
                    np.ascontiguousarray(s["observation"]["depth"], dtype="<f4").tobytes()
                ).hexdigest()
                for s in steps
            ],
            "first_value_per_step": floats(
                [s["observation"]["depth"][0, 0] for s in steps]
            ),
            "sum_per_step": floats(
                [np.sum(s["observation"]["depth"], dtype=np.float64) for s in steps]
            ),
        }
        cams = {"steps/observation/image": "image"}
    rec["images"] = {}
    for key, sub in cams.items():
        shapes = {tuple(s["observation"][sub].shape) for s in steps}
        assert len(shapes) == 1, shapes
        h, w, c = shapes.pop()
        rec["images"][key] = {"height": h, "width": w, "channels": c}
    return rec


SPLIT_STRINGS = [
    "train",
    "train[:90%]",
    "train[90%:]",
    "train[:50%]",
    "train[33%:67%]",
    "train[10:20]",
    "train[:4]",
    "train[-3:]",
    "train[-10%:]",
    "train[:1shard]",
    "train[1shard:]",
    "train[1shard:2shard]",
    "train[2shard]",
    "train[0shard]",
    "train[-1shard:]",
    "train[:1%]",
    "train[:17%]",
    "train[:5%]+val",
    "train+val",
    "val[:50%]",
    "test[:50%]",
    "train[:5%]+test",
    "train+test",
    "all",
    "train[:40%]+train[60%:]",
    "train[2:4]+train[2:4]",
    "train[:33.5%]",
    "train[:100%]",
    "train[:101%]",
    "train[:30]",
    "train[25%:10%]",
    "train[:-2]",
    "train[5shard]",
    "TRAIN",
    "train[]",
    "nosuch",
    # closest rounding of exact halves goes to the even integer (n=10)
    "train[:15%]",
    "train[:25%]",
    "train[:35%]",
    "train[:45%]",
    "train[:12.5%]",
    "train[:-1shard]",
    "train[-1shard]",
    "train[:1shard]+train[2shard]",
    "train[:50%] + val",
    " train",
    # selections that are empty
    "train[:0]",
    "train[5:5]",
    "train[0%:0%]",
    "train[:1%]+val",
]


# split string -> (when the note applies: "ok", "error" or "any", note)
SPLIT_NOTES = {
    "train[25%:10%]": (
        "any",
        "reversed bounds: TFDS does not reject them and its result is "
        "meaningless (wrong records, or a cardinality error while iterating); "
        "treat as a config error",
    ),
    "train[:1%]+val": (
        "ok",
        "an empty part of a union is dropped silently; only an entirely empty "
        "selection is an error",
    ),
    "train[:5%]+test": (
        "ok",
        "an empty part of a union is dropped silently; only an entirely empty "
        "selection is an error",
    ),
    "train[5shard]": ("error", "a shard index past the end selects nothing (no range error)"),
    "train[2shard]": ("error", "a shard index past the end selects nothing (no range error)"),
}


def _note(entry: dict) -> None:
    when, text = SPLIT_NOTES.get(entry["split"], (None, None))
    if when == "any" or (when == "ok" and entry["ok"]) or (when == "error" and not entry["ok"]):
        entry["note"] = text


def resolve_splits(builder) -> list[dict]:
    out = []
    for s in SPLIT_STRINGS:
        entry: dict = {"split": s}
        try:
            instr = builder.info.splits[s].file_instructions
            ds = builder.as_dataset(split=s, shuffle_files=False)
            ids = [int(e["episode_metadata"]["episode_id"]) for e in tfds.as_numpy(ds)]
            entry["ok"] = True
            entry["num_episodes"] = len(ids)
            entry["episode_ids"] = ids
            entry["file_instructions"] = [
                {
                    "file": os.path.basename(os.fspath(fi.filename)),
                    "skip": fi.skip,
                    "take": fi.take,
                    "examples_in_shard": fi.examples_in_shard,
                }
                for fi in instr
            ]
        except Exception as e:  # pylint: disable=broad-except
            entry["ok"] = False
            entry["error_type"] = type(e).__name__
            entry["error"] = clean_message(str(e))
        _note(entry)
        out.append(entry)
    return out


def manifest_for(builder) -> dict:
    name = builder.name
    version_dir = os.path.join(DATA_DIR, name, str(builder.version))
    info = builder.info
    splits = {}
    first_raw = None
    for split_name, split in info.splits.items():
        shards = []
        for fname in split.filenames:
            path = os.path.join(version_dir, fname)
            spans = record_spans(path)
            records = []
            for idx, raw in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
                if first_raw is None:
                    first_raw = raw
                rec = {
                    "index": idx,
                    "offset": spans[idx][0],
                    "length": spans[idx][1],
                }
                assert spans[idx][1] == len(raw)
                rec.update(describe_record(name, info.features, raw))
                records.append(rec)
            assert len(records) == len(spans)
            shards.append(
                {
                    "file": fname,
                    "num_records": len(records),
                    "num_bytes": os.path.getsize(path),
                    "sha256": sha256_file(path),
                    "records": records,
                }
            )
        splits[split_name] = {
            "num_examples": split.num_examples,
            "shard_lengths": list(split.shard_lengths),
            "shards": shards,
        }
    return {
        "name": name,
        "version": str(builder.version),
        "dir": rel(version_dir),
        "split_order": list(info.splits.keys()),
        "splits": splits,
        "example_keys": example_key_summary(first_raw),
        "split_strings": resolve_splits(builder),
    }


# --------------------------------------------------------------------------
# Pixel-parity references.
# --------------------------------------------------------------------------

FRAME_PICKS = [
    # dataset, split, shard index, record index, step, image key
    ("tiny_bridge", "train", 0, 1, 0, "steps/observation/image"),
    ("tiny_bridge", "train", 2, 3, 2, "steps/observation/wrist_image"),
    ("tiny_bridge", "val", 1, 0, 3, "steps/observation/image"),
    ("tiny_table", "train", 0, 2, 1, "steps/observation/rgb"),
    ("tiny_table", "train", 1, 0, 3, "steps/observation/rgb"),
    ("tiny_kuka", "train", 1, 2, 2, "steps/observation/image"),
]
RESIZES = [(64, 64), (48, 80)]


def write_frames(builders: dict) -> None:
    os.makedirs(FRAMES_DIR)
    index = []
    for ds_name, split, shard_no, rec_no, step, key in FRAME_PICKS:
        b = builders[ds_name]
        fname = b.info.splits[split].filenames[shard_no]
        path = os.path.join(DATA_DIR, ds_name, str(b.version), fname)
        raw = list(tf.data.TFRecordDataset(path).skip(rec_no).take(1).as_numpy_iterator())[0]
        ex = tf.train.Example.FromString(raw)
        encoded = ex.features.feature[key].bytes_list.value[step]
        img = tf.io.decode_image(encoded, channels=3)
        cam = key.rsplit("/", 1)[1]
        stem = f"{ds_name}_{split}_shard{shard_no}_rec{rec_no}_step{step}_{cam}"
        files = []
        arrays = [("decoded", None, img.numpy())]
        for size in RESIZES:
            resized = tf.cast(
                tf.image.resize(img, size, method="bilinear", antialias=False),
                tf.uint8,
            )
            arrays.append(("resized", list(size), resized.numpy()))
        for what, size, arr in arrays:
            assert arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3
            suffix = "" if size is None else f"_{size[0]}x{size[1]}"
            out = os.path.join(FRAMES_DIR, f"{stem}{suffix}.npy")
            np.save(out, arr, allow_pickle=False)
            files.append(
                {
                    "file": os.path.basename(out),
                    "kind": what,
                    "size": size,  # [height, width] given to tf.image.resize
                    "shape": list(arr.shape),
                    "sha256": sha256_file(out),
                }
            )
        index.append(
            {
                "dataset": ds_name,
                "split": split,
                "shard_file": fname,
                "record_index": rec_no,
                "step": step,
                "image_key": key,
                "encoded_format": "png" if encoded[:4] == b"\x89PNG" else "jpeg",
                "encoded_bytes": len(encoded),
                "files": files,
            }
        )
    doc = {
        "decode": "tf.io.decode_image(encoded_bytes, channels=3) -> uint8 HxWx3",
        "resize": "tf.cast(tf.image.resize(img, size, method='bilinear', antialias=False), tf.uint8)",
        "npy": "numpy .npy v1.0, dtype |u1, C order, shape [H, W, 3]",
        "frames": index,
    }
    write_json(os.path.join(FRAMES_DIR, "index.json"), doc)


# --------------------------------------------------------------------------
# Corrupt variants of tiny_table/train.
# --------------------------------------------------------------------------


def read_records(path: str) -> list[bytes]:
    return list(tf.data.TFRecordDataset(path).as_numpy_iterator())


def write_records(path: str, records: list[bytes]) -> None:
    with tf.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)


def tf_read_error(variant_dir: str, shard: str, features) -> dict | None:
    """Where and how TensorFlow first fails on the shard.

    stage "framing": tf.data.TFRecordDataset (length/data CRCs, truncation);
    stage "proto": tf.train.Example.FromString on the payload;
    stage "features": the builder's features.deserialize_example.
    """
    index = -1
    stage = "framing"
    try:
        for index, raw in enumerate(
            tf.data.TFRecordDataset(os.path.join(variant_dir, shard)).as_numpy_iterator()
        ):
            stage = "proto"
            tf.train.Example.FromString(raw)
            stage = "features"
            ex = features.deserialize_example(raw)
            for _ in ex["steps"]:
                pass
            stage = "framing"
    except Exception as e:  # pylint: disable=broad-except
        return {
            "stage": stage,
            "record_index": index + 1 if stage == "framing" else index,
            "error": f"{type(e).__name__}: {clean_message(str(e))}",
        }
    return None


def write_corrupt(table) -> None:
    src_dir = os.path.join(DATA_DIR, table.name, str(table.version))
    shards = table.info.splits["train"].filenames
    assert len(shards) == 2, shards
    os.makedirs(CORRUPT_DIR)

    # Sanity: TFRecordWriter reproduces TFDS's shard bytes exactly.
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "x")
        write_records(p, read_records(os.path.join(src_dir, shards[0])))
        assert sha256_file(p) == sha256_file(os.path.join(src_dir, shards[0]))

    def fresh(variant: str) -> str:
        d = os.path.join(CORRUPT_DIR, variant)
        shutil.copytree(src_dir, d)
        return d

    index = {}

    # bad_crc: flip one payload byte of record 2 in shard 0.
    d = fresh("bad_crc")
    shard, rec = shards[0], 2
    path = os.path.join(d, shard)
    off, length = record_spans(path)[rec]
    flip_at = off + 12 + length // 2
    with open(path, "r+b") as f:
        f.seek(flip_at)
        b = f.read(1)[0]
        f.seek(flip_at)
        f.write(bytes([b ^ 0x5A]))
    index["bad_crc"] = {
        "shard": shard,
        "record_index": rec,
        "kind": "data_crc_mismatch",
        "detail": "one payload byte XORed with 0x5A; framing length and length CRC are intact",
        "record_offset": off,
        "payload_length": length,
        "flipped_byte_offset": flip_at,
        "tf_error": tf_read_error(d, shard, table.info.features),
    }

    # truncated: cut shard 1 in the middle of its last record.
    d = fresh("truncated")
    shard = shards[1]
    path = os.path.join(d, shard)
    spans = record_spans(path)
    off, length = spans[-1]
    original = os.path.getsize(path)
    cut = off + 12 + length // 2
    with open(path, "r+b") as f:
        f.truncate(cut)
    index["truncated"] = {
        "shard": shard,
        "record_index": len(spans) - 1,
        "kind": "truncated",
        "detail": "file cut in the middle of the last record's payload; dataset_info.json still counts it",
        "record_offset": off,
        "payload_length": length,
        "original_size": original,
        "truncated_size": cut,
        "complete_records": len(spans) - 1,
        "tf_error": tf_read_error(d, shard, table.info.features),
    }

    # not_example: valid framing, payload is random bytes that are no Example.
    d = fresh("not_example")
    shard, rec = shards[1], 1
    path = os.path.join(d, shard)
    records = read_records(path)
    junk = bytearray(_rng(4242).integers(0, 256, size=300, dtype=np.uint8).tobytes())
    junk[0] = 0x0F  # tag: field 1 with wire type 7, which does not exist
    junk = bytes(junk)
    try:
        tf.train.Example.FromString(junk)
        raise AssertionError("junk parsed as an Example")
    except Exception as e:  # pylint: disable=broad-except
        if isinstance(e, AssertionError):
            raise
    records[rec] = junk
    write_records(path, records)
    index["not_example"] = {
        "shard": shard,
        "record_index": rec,
        "kind": "unparsable_example",
        "detail": "300 random bytes (first byte 0x0F: invalid wire type 7) with correct TFRecord framing and CRCs",
        "record_offset": record_spans(path)[rec][0],
        "payload_length": len(junk),
        "tf_error": tf_read_error(d, shard, table.info.features),
    }

    # missing_image: a valid Example without steps/observation/rgb.
    d = fresh("missing_image")
    shard, rec = shards[0], 3
    path = os.path.join(d, shard)
    records = read_records(path)
    ex = tf.train.Example.FromString(records[rec])
    del ex.features.feature["steps/observation/rgb"]
    records[rec] = ex.SerializeToString(deterministic=True)
    write_records(path, records)
    index["missing_image"] = {
        "shard": shard,
        "record_index": rec,
        "kind": "missing_feature",
        "missing_key": "steps/observation/rgb",
        "detail": "valid tf.train.Example with every other key intact",
        "record_offset": record_spans(path)[rec][0],
        "payload_length": len(records[rec]),
        "tf_error": tf_read_error(d, shard, table.info.features),
    }

    for variant, v in index.items():
        v["dir"] = f"corrupt/{variant}"
        v["files"] = {
            f: {"num_bytes": os.path.getsize(os.path.join(CORRUPT_DIR, variant, f)),
                "sha256": sha256_file(os.path.join(CORRUPT_DIR, variant, f))}
            for f in sorted(os.listdir(os.path.join(CORRUPT_DIR, variant)))
        }
    doc = {
        "source": f"datasets/{table.name}/{table.version} (split train)",
        "note": "each variant is a full copy of the source directory with exactly one defect; "
        "all other records and files are byte-identical to the source",
        "variants": index,
    }
    write_json(os.path.join(CORRUPT_DIR, "index.json"), doc)


# --------------------------------------------------------------------------


def write_json(path: str, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False, sort_keys=False)
        f.write("\n")


ENCODING_NOTES = {
    "flattening": "one tf.train.Example per episode; nested feature paths are "
    "joined with '/'; every step feature is one list holding all steps "
    "concatenated in step order (a [7] float per step -> num_steps*7 floats)",
    "bool": "int64_list, 0 or 1",
    "int32_tensor": "int64_list (tiny_table instruction: num_steps*64 values)",
    "float32_tensor": "float_list",
    "float64_tensor": "float_list too, i.e. rounded to float32 when written; "
    "TFDS reads it back as float32 and casts to float64 (tiny_kuka action)",
    "text": "bytes_list, UTF-8, one value per step (or one per episode under "
    "episode_metadata); empty strings are present as empty values",
    "image": "bytes_list, one encoded JPEG or PNG per step",
    "tensor_encoding_bytes": "bytes_list, one value per step: the raw "
    "little-endian array in C order (float32[4] -> 16 bytes)",
    "tensor_encoding_zlib": "bytes_list, one value per step: zlib stream "
    "(RFC 1950, with header) of the raw little-endian C-order array",
    "floats_in_this_file": "float32 values are written as the exact double of "
    "the float32; parse as float64 and convert to float32 without loss",
}


def main() -> int:
    from google.protobuf.internal import api_implementation  # pylint: disable=g-import-not-at-top

    assert api_implementation.Type() == "python", api_implementation.Type()
    tfds.disable_progress_bar()
    for p in (DATA_DIR, FRAMES_DIR, CORRUPT_DIR):
        shutil.rmtree(p, ignore_errors=True)
    if os.path.exists(MANIFEST):
        os.remove(MANIFEST)

    builders = {}
    with tempfile.TemporaryDirectory(prefix="oxefs-tfds-dl-") as dl:
        for cls in BUILDERS:
            print(f"building {cls.name} ...")
            b = build(cls, dl)
            tidy_dataset_dir(b)
            builders[b.name] = b

    manifest = {
        "generator": "testdata/generate.py",
        "tensorflow_version": tf.__version__,
        "tensorflow_datasets_version": tfds.__version__,
        "split_rounding": {
            "default": "closest",
            "rule": "percent bounds become int(round(pct * num_examples / 100)) "
            "(Python round: halves go to the even integer); 'pct1_dropremainder' "
            "is only reachable through tfds.core.ReadInstruction, never a split string",
        },
        "read_order": "split_strings[].episode_ids come from as_dataset(split, shuffle_files=False) "
        "with the default ReadConfig (interleave cycle_length=16, block_length=16 over the file "
        "instructions in order); every shard here has fewer than 16 records, so this equals "
        "reading the file instructions one after another",
        "encoding_notes": ENCODING_NOTES,
        "datasets": {},
    }
    for name, b in builders.items():
        print(f"reading back {name} ...")
        manifest["datasets"][name] = manifest_for(b)
    write_json(MANIFEST, manifest)

    print("writing expected frames ...")
    write_frames(builders)
    print("writing corrupt variants ...")
    write_corrupt(builders["tiny_table"])
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
