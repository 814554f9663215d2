"""Writes the LeRobot v3 fixtures under testdata/lerobot/ with the real
`lerobot` package, and what lerobot itself reads back from them.

    pip install lerobot numpy        # lerobot 0.4.x: writes format v3.0
    python3 testdata/generate_lerobot.py      # from the repository root
    python3 testdata/generate_lerobot.py lerobot_hevc   # only that dataset:
                                                        # its records replace
                                                        # its old ones

CI never runs this script; tests only read its outputs. See README.md.

Datasets (frames are a moving colour pattern, so that every frame differs):

- lerobot_av1: two cameras stored as AV1 video (libsvtav1, LeRobot's
  default), one camera stored as PNG images inside the data parquet
  files, float32 action[7] and observation.state[6], three tasks; 7
  episodes of 9..16 frames; file size limits small enough that the data is
  split over several parquet files and each video file holds several
  episodes. splits: train 0:5, val 5:7.
- lerobot_h264: one camera as H.264 video (lerobot's "h264" codec), 3
  episodes, one task.
- lerobot_hevc: one camera as HEVC video (lerobot's "hevc" codec: libx265,
  whose default open groups of pictures put leading pictures, shown before
  their keyframe, after it in decode order), 3 episodes, two tasks. Its
  expected frames include every leading picture of the first episode.

expected.json records, for chosen frames (global index i), what
LeRobotDataset(root, video_backend="pyav")[i] returns: episode_index,
frame_index, index, timestamp, task, action, observation.state; and every
camera's frame as uint8 [H, W, 3] in expected/<dataset>_<i>_<camera>.npy
(lerobot's float tensor times 255, rounded: lossless for its k/255 values).
Then, with TensorFlow (a separate environment: lerobot and tensorflow need
different numpy versions), resize_lerobot_expected.py writes each frame
resized as the RLDS parity tests do, expected/<...>_HxW.npy.
"""

import json
import shutil
import sys
from pathlib import Path

import numpy as np

from lerobot.datasets.lerobot_dataset import LeRobotDataset

OUT = Path("testdata/lerobot")
H, W = 48, 64
FPS = 10
TASKS = ["pick up the red cube", "open the drawer", "push the button to the left"]


def frame(ep, t, cam):
    """A deterministic colourful pattern that moves with t."""
    y, x = np.mgrid[0:H, 0:W]
    r = (x * 4 + t * 9 + ep * 31 + cam * 50) % 256
    g = (y * 5 + t * 7 + cam * 80) % 256
    b = ((x + y) * 3 + ep * 17 + t * 3) % 256
    img = np.stack([r, g, b], axis=-1).astype(np.uint8)
    # a square that moves, so that motion compensation has work to do
    cy, cx = (t * 3 + ep) % (H - 10), (t * 5 + 2 * ep) % (W - 10)
    img[cy : cy + 10, cx : cx + 10] = (255 - 20 * cam, 40 * ep % 256, 200)
    return img


def write(name, cams, images, lengths, tasks, vcodec, splits, data_mb, video_mb):
    root = OUT / name
    if root.exists():
        shutil.rmtree(root)
    shutil.rmtree(OUT / "expected", ignore_errors=True) if name == "lerobot_av1" else None
    features = {
        "action": {"dtype": "float32", "shape": (7,), "names": [f"a{i}" for i in range(7)]},
        "observation.state": {"dtype": "float32", "shape": (6,), "names": [f"s{i}" for i in range(6)]},
    }
    for c in cams:
        features[c] = {"dtype": "video", "shape": (H, W, 3), "names": ["height", "width", "channels"]}
    for c in images:
        features[c] = {"dtype": "image", "shape": (H, W, 3), "names": ["height", "width", "channels"]}
    ds = LeRobotDataset.create(
        repo_id=f"oxefs/{name}",
        fps=FPS,
        features=features,
        root=root,
        robot_type="synthetic_arm",
        use_videos=True,
        vcodec=vcodec,
    )
    ds.meta.update_chunk_settings(data_files_size_in_mb=data_mb, video_files_size_in_mb=video_mb)
    rng = np.random.default_rng(7)
    for ep, n in enumerate(lengths):
        task = tasks[ep % len(tasks)]
        for t in range(n):
            f = {
                "action": rng.standard_normal(7).astype(np.float32),
                "observation.state": rng.standard_normal(6).astype(np.float32),
                "task": task,
            }
            for k, c in enumerate(cams + images):
                f[c] = frame(ep, t, k)
            ds.add_frame(f)
        ds.save_episode()
    ds.finalize()
    # lerobot writes splits {"train": "0:N"}; the fixture adds a val split.
    info_path = root / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    info["splits"] = splits
    info_path.write_text(json.dumps(info, indent=4) + "\n")
    # Leftovers of encoding (per-episode image folders) are not the dataset.
    shutil.rmtree(root / "images", ignore_errors=True)
    return root


def continuous_frame(ds, root, key, ep, timestamp):
    """The frame of camera key shown at the episode's timestamp, from a
    PyAV decode of its whole video file from the start, without seeking
    (to_ndarray rgb24: the conversion lerobot's pyav path uses), as float
    [C, H, W] in [0, 1] like LeRobotDataset's. lerobot 0.4.4 cannot return
    a leading picture of an open group of pictures (both its backends seek
    to the keyframe after it and raise FrameTimestampError), so for those
    this is the reference."""
    import av
    import torch

    e = ds.meta.episodes[ep]
    path = root / ds.meta.get_video_file_path(ep, key)
    t = e[f"videos/{key}/from_timestamp"] + timestamp
    with av.open(str(path)) as c:
        for f in c.decode(c.streams.video[0]):
            if abs(f.time - t) < 1e-4:
                return torch.from_numpy(f.to_ndarray(format="rgb24")).permute(2, 0, 1).float() / 255.0
    sys.exit(f"{path}: no frame at {t}")


def expected(name, root, picks, leading=()):
    """What LeRobotDataset(pyav)[i] returns for each pick; for a pick in
    leading, the non-video columns through lerobot and the frames from
    continuous_frame."""
    ds = LeRobotDataset(f"oxefs/{name}", root=root, video_backend="pyav")
    out = []
    edir = OUT / "expected"
    edir.mkdir(parents=True, exist_ok=True)
    for i in picks:
        if i in leading:
            item = dict(ds.hf_dataset[i])
            item["task"] = ds.meta.tasks.iloc[int(item["task_index"])].name
            for key in ds.meta.video_keys:
                item[key] = continuous_frame(ds, root, key, int(item["episode_index"]), float(item["timestamp"]))
        else:
            item = ds[i]
            for key in ds.meta.video_keys:  # the two references agree
                c = continuous_frame(ds, root, key, int(item["episode_index"]), float(item["timestamp"]))
                if not (c == item[key]).all():
                    sys.exit(f"{name}[{i}] {key}: lerobot's frame differs from the continuous decode")
        rec = {
            "dataset": name,
            "i": i,
            "episode_index": int(item["episode_index"]),
            "frame_index": int(item["frame_index"]),
            "index": int(item["index"]),
            "timestamp": float(item["timestamp"]),
            "task": item["task"],
            "action": [float(v) for v in item["action"]],
            "observation.state": [float(v) for v in item["observation.state"]],
            "cameras": {},
        }
        if i in leading:
            rec["frames_from"] = "pyav, decoding the whole file (a leading picture lerobot cannot return)"
        for key in ds.meta.camera_keys:
            chw = item[key].numpy()
            img = np.rint(chw.transpose(1, 2, 0) * 255.0).astype(np.uint8)
            fname = f"{name}_{i}_{key}.npy"
            np.save(edir / fname, img)
            rec["cameras"][key] = fname
        out.append(rec)
    return out


def leading_pictures(root, limit):
    """Global frame indices of the first `limit` leading pictures of the
    dataset's first video file (samples shown before the keyframe that
    precedes them in decode order), read with PyAV."""
    import av

    path = next(sorted((root / "videos").rglob("*.mp4")).__iter__())
    out = []
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        step = 1 / (FPS * s.time_base)  # pts per frame
        last_key = None
        for p in c.demux(s):
            if p.size == 0 or p.pts is None:
                continue
            if last_key is not None and p.pts < last_key and len(out) < limit:
                out.append(int(round(p.pts / step)))
            if p.is_keyframe:
                last_key = p.pts
    return out


def corrupt():
    """Damaged copies of files of lerobot_av1, each under
    corrupt/<variant>/ at its path in the dataset (tests lay them over a
    copy of the dataset); corrupt/index.json says which episodes each
    damages. Truncated and unknown-codec videos are made by the Go tests."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = OUT / "lerobot_av1"
    cdir = OUT / "corrupt"
    shutil.rmtree(cdir, ignore_errors=True)
    index = {}

    def out(variant, rel):
        p = cdir / variant / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    data1 = "data/chunk-000/file-001.parquet"
    eps_rel = "meta/episodes/chunk-000/file-000.parquet"
    episodes = pq.read_table(base / eps_rel)
    in_file1 = [e for e, f in zip(episodes.column("episode_index").to_pylist(), episodes.column("data/file_index").to_pylist()) if f == 1]

    # A data file without a column the features declare.
    t = pq.read_table(base / data1).drop_columns(["observation.state"])
    pq.write_table(t, out("missing_column", data1))
    index["missing_column"] = {"file": data1, "episodes": in_file1, "error": "observation.state"}

    # A data file that lost its last row group (the last episode's rows).
    f = pq.ParquetFile(base / data1)
    n = f.metadata.num_row_groups
    with pq.ParquetWriter(out("missing_row_group", data1), f.schema_arrow) as w:
        for i in range(n - 1):
            w.write_table(f.read_row_group(i))
    last = f.read_row_group(n - 1).column("episode_index").to_pylist()[0]
    index["missing_row_group"] = {"file": data1, "episodes": [last], "error": "rows"}

    # The last episode's frames of one camera put 10 s past the end of its video.
    key = "videos/observation.images.top/from_timestamp"
    col = episodes.column(key).to_pylist()
    last_ep = len(col) - 1
    col[last_ep] += 10.0
    t = episodes.set_column(episodes.schema.get_field_index(key), key, pa.array(col, type=pa.float64()))
    pq.write_table(t, out("past_video_end", eps_rel))
    index["past_video_end"] = {"file": eps_rel, "episodes": [last_ep], "error": "outside its video"}

    (cdir / "index.json").write_text(json.dumps(index, indent=1) + "\n")


def write_hevc():
    return write(
        "lerobot_hevc",
        cams=["observation.images.front"],
        images=[],
        lengths=[20, 17, 22],
        tasks=TASKS[:2],
        vcodec="hevc",
        splits={"train": "0:3"},
        data_mb=100,
        video_mb=500,
    )


def hevc_records(root):
    lead = leading_pictures(root, 4)
    if not lead:
        sys.exit("lerobot_hevc has no leading pictures: the fixture would not test them")
    return expected("lerobot_hevc", root, sorted(set(lead + [0, 19, 20, 58])), leading=set(lead))


def main():
    import lerobot

    if sys.argv[1:] == ["lerobot_hevc"]:
        path = OUT / "expected.json"
        manifest = json.loads(path.read_text())
        records = [r for r in manifest["frames"] if r["dataset"] != "lerobot_hevc"]
        manifest["frames"] = records + hevc_records(write_hevc())
        path.write_text(json.dumps(manifest, indent=1) + "\n")
        return
    roots = {}
    roots["lerobot_av1"] = write(
        "lerobot_av1",
        cams=["observation.images.top", "observation.images.wrist"],
        images=["observation.images.side"],
        lengths=[12, 9, 16, 10, 13, 11, 14],
        tasks=TASKS,
        vcodec="libsvtav1",
        splits={"train": "0:5", "val": "5:7"},
        data_mb=0.012,
        video_mb=0.03,
    )
    roots["lerobot_h264"] = write(
        "lerobot_h264",
        cams=["observation.images.front"],
        images=[],
        lengths=[10, 12, 9],
        tasks=TASKS[:1],
        vcodec="h264",
        splits={"train": "0:3"},
        data_mb=100,
        video_mb=500,
    )
    records = []
    records += expected("lerobot_av1", roots["lerobot_av1"], [0, 11, 12, 30, 47, 70, 84])
    records += expected("lerobot_h264", roots["lerobot_h264"], [0, 9, 10, 30])
    records += hevc_records(write_hevc())
    manifest = {
        "lerobot_version": lerobot.__version__ if hasattr(lerobot, "__version__") else "",
        "python": sys.version.split()[0],
        "frames": records,
    }
    (OUT / "expected.json").write_text(json.dumps(manifest, indent=1) + "\n")
    corrupt()


if __name__ == "__main__":
    main()
