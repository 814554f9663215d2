"""LeRobot's own loader on oxefs's step-sample work, for docs/performance.md's
comparison: the same config file that `oxefs bench --config` reads (a mix
of LeRobot v3 datasets with a `sample:` block) is turned into
LeRobotDataset(root, delta_timestamps=...) per dataset, and a torch
DataLoader (shuffle, num_workers) draws batches from their concatenation.

    python lerobot_steps.py SPEC.yaml [--synth DIR] [--workers 4] [--warmup 4] [--batches 16] [--runs 3]

In the workers, each sample becomes what an oxefs batch holds for it:
every camera slot's frames resized to the slot's size (bilinear, no
antialias, as oxefs resizes: torch.nn.functional.interpolate by default,
--resize torchvision for torchvision.transforms.v2.functional.resize) and
turned into uint8, kept channels first as LeRobot gives them
([T,3,H,W]); zeros with image_mask false for a slot the dataset does not
map; state and action zero-padded to the mix's widest, with their masks;
the _is_pad flags LeRobot computes; dataset_index, frame_index and the
strings (dataset_name, episode_id, task, robot).

LeRobotDataset decodes every camera of a dataset for every sample, at t
when the config gives it no deltas, whether or not the spec uses it (its
__getitem__ walks meta.video_keys). --only-spec-cameras removes the
others from the dataset's features first, so that the decode work is the
spec's.

Each run starts fresh workers, draws --warmup batches, then times
--batches batches (by default one and four rounds of the workers: the
workers deliver their batches in rounds, and a count that is not a
multiple of --workers times part of a round): samples/s, and CPU seconds
per sample of this process and its workers (utime + stime from /proc over
the timed batches). Prints one JSON object with every run and the
medians on stdout, each run and the first batch's arrays on stderr.
Needs the lerobot package (0.4.x, dataset format v3.0) and PyYAML; never
run by CI.
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_deltas(d, where):
    """A deltas block ({steps: [...] | "a:b[:c]"} or {seconds: [...]}) as
    ("steps", [ints]) or ("seconds", [floats]); [0] steps when absent."""
    d = d or {}
    if "steps" in d and "seconds" in d:
        sys.exit(f"{where}: give steps or seconds, not both")
    if "seconds" in d:
        secs = [float(x) for x in d["seconds"]]
        if not secs:
            sys.exit(f"{where}: seconds is empty")
        return "seconds", secs
    steps = d.get("steps", [0])
    if isinstance(steps, str):
        parts = steps.split(":")
        if len(parts) not in (2, 3):
            sys.exit(f"{where}: steps {steps!r} is not start:stop[:step]")
        start, stop = int(parts[0] or 0), int(parts[1])
        step = int(parts[2]) if len(parts) == 3 and parts[2] else 1
        steps = list(range(start, stop, step))
    steps = [int(x) for x in steps]
    if not steps:
        sys.exit(f"{where}: steps is empty")
    return "steps", steps


def to_seconds(deltas, fps):
    """LeRobot's delta_timestamps for deltas at fps."""
    kind, vals = deltas
    return list(vals) if kind == "seconds" else [s / fps for s in vals]


def split_episodes(info, split, name):
    """The episode indices of a split of info.json ("train", "val", ...)."""
    splits = info.get("splits", {})
    if split not in splits:
        sys.exit(f"dataset {name}: split {split!r} is not one of {sorted(splits)} (this script reads plain split names)")
    lo, hi = (int(x) for x in str(splits[split]).split(":"))
    return list(range(lo, hi))


class Spec:
    """The parts of an oxefs step-mode config this script uses."""

    def __init__(self, path, synth):
        import yaml

        with open(path) as f:
            text = f.read()
        if synth:
            text = text.replace("@SYNTH@", synth)
        if "@SYNTH@" in text:
            sys.exit(f"{path} has @SYNTH@ placeholders: pass --synth DIR")
        cfg = yaml.safe_load(text)
        s = cfg.get("sample")
        if s is None:
            sys.exit(f"{path} has no sample block: this script runs step mode only")
        self.seed = int(cfg.get("seed", 0))
        self.batch_size = int(cfg.get("batch_size", 64))
        default_size = cfg.get("image_size", [256, 256])
        self.drop_last = int(s.get("drop_last", 0))
        if self.drop_last:
            sys.exit("drop_last > 0: LeRobotDataset has no such option (this script runs drop_last 0 only)")
        self.slots = []  # (name, (h, w), deltas)
        for name, c in (s.get("cameras") or {}).items():
            c = c or {}
            size = tuple(int(x) for x in c.get("size", default_size))
            self.slots.append((name, size, parse_deltas(c, f"sample.cameras.{name}")))
        self.state = parse_deltas(s.get("state"), "sample.state")
        self.action = parse_deltas(s.get("action"), "sample.action")
        self.datasets = [d for d in cfg["datasets"] if float(d.get("weight", 1.0)) > 0]
        self.dataset_index = {d["name"]: i for i, d in enumerate(cfg["datasets"])}


class StepSamples:
    """The concatenation of the spec's datasets, each item a sample as an
    oxefs step-mode batch holds it (LeRobot's layout for frames)."""

    def __init__(self, spec, backend, resize, only_spec_cameras):
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        self.spec, self.resize = spec, resize
        self.parts, self.starts, self.meta = [], [], []
        n = 0
        for d in spec.datasets:
            name, root = d["name"], d["source"]
            with open(os.path.join(root, "meta", "info.json")) as f:
                info = json.load(f)
            fps = float(info["fps"])
            keys = [k for k, v in info["features"].items() if v.get("dtype") in ("video", "image")]
            cams = d.get("cameras")
            if cams is None:
                if len(keys) != 1:
                    sys.exit(f"dataset {name} has image keys {keys}: say which goes to which slot with `cameras`")
                cams = {spec.slots[0][0]: keys[0]} if spec.slots else {}
            slot_names = [s[0] for s in spec.slots]
            for slot, key in cams.items():
                if slot not in slot_names:
                    sys.exit(f"dataset {name}: slot {slot!r} is not one of the mix's slots {slot_names}")
                if key not in keys:
                    sys.exit(f"dataset {name}: image key {key!r} is not one of its image keys {keys}")
            action_keys = d.get("action_keys", ["action"])
            state_key = d.get("state_key", "observation.state")
            dt = {}
            for slot, _, deltas in spec.slots:
                if slot in cams:
                    dt[cams[slot]] = to_seconds(deltas, fps)
            for k in action_keys:
                dt[k] = to_seconds(spec.action, fps)
            if state_key:
                dt[state_key] = to_seconds(spec.state, fps)
            ds = LeRobotDataset(name, root=root, episodes=split_episodes(info, d.get("split", "train"), name),
                                delta_timestamps=dt, video_backend=backend)
            if only_spec_cameras:
                used = set(cams.values())
                for k in list(ds.meta.video_keys):
                    if k not in used:
                        del ds.meta.info["features"][k]
            self.parts.append(ds)
            self.starts.append(n)
            n += len(ds)
            self.meta.append({
                "name": name, "cameras": cams, "action_keys": action_keys, "state_key": state_key,
                "dataset_index": spec.dataset_index[name], "split": d.get("split", "train"),
                "robot": info.get("robot_type") or "", "fps": fps, "delta_timestamps": dt,
                "frames": len(ds), "episodes": ds.num_episodes,
                "action_dim": sum(info["features"][k]["shape"][0] for k in action_keys),
                "state_dim": info["features"][state_key]["shape"][0] if state_key else 0,
            })
        self.n = n
        self.action_dim = max(m["action_dim"] for m in self.meta)
        self.state_dim = max(m["state_dim"] for m in self.meta)

    def __len__(self):
        return self.n

    def _frames(self, x, size):
        """[T,3,H,W] float in [0,1] -> [T,3,h,w] uint8 (LeRobot squeezes
        T = 1 away: [3,H,W])."""
        import torch

        if x.dim() == 3:
            x = x.unsqueeze(0)
        if tuple(x.shape[-2:]) != size:
            if self.resize == "torchvision":
                from torchvision.transforms.v2 import functional as TF

                x = TF.resize(x, list(size), antialias=False)
            else:
                x = torch.nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=False)
        return (x * 255).round_().clamp_(0, 255).to(torch.uint8)

    def __getitem__(self, i):
        import bisect

        import torch

        p = bisect.bisect_right(self.starts, i) - 1
        m, item = self.meta[p], self.parts[p][i - self.starts[p]]
        out, mask = {}, []
        for slot, size, deltas in self.spec.slots:
            key = m["cameras"].get(slot)
            T = len(deltas[1])
            if key is None:
                out[f"observation.images.{slot}"] = torch.zeros((T, 3) + size, dtype=torch.uint8)
                out[f"observation.images.{slot}_is_pad"] = torch.ones(T, dtype=torch.bool)
                mask.append(False)
                continue
            out[f"observation.images.{slot}"] = self._frames(item[key], size)
            out[f"observation.images.{slot}_is_pad"] = item[f"{key}_is_pad"]
            mask.append(True)
        out["image_mask"] = torch.tensor(mask, dtype=torch.bool)
        if self.state_dim:
            s = item[m["state_key"]] if m["state_key"] else torch.zeros((len(self.spec.state[1]), 0))
            out["observation.state"] = torch.nn.functional.pad(s, (0, self.state_dim - s.shape[-1]))
            out["observation.state_is_pad"] = (item[f"{m['state_key']}_is_pad"] if m["state_key"]
                                               else torch.ones(s.shape[0], dtype=torch.bool))
            out["state_mask"] = torch.arange(self.state_dim) < s.shape[-1]
        if self.action_dim:
            a = torch.cat([item[k] for k in m["action_keys"]], dim=-1)
            out["action"] = torch.nn.functional.pad(a, (0, self.action_dim - a.shape[-1]))
            out["action_is_pad"] = item[f"{m['action_keys'][0]}_is_pad"]
            out["action_mask"] = torch.arange(self.action_dim) < a.shape[-1]
        out["dataset_index"] = torch.tensor(m["dataset_index"], dtype=torch.int64)
        out["frame_index"] = item["frame_index"].to(torch.int64)
        ep = int(item["episode_index"])
        out["dataset_name"] = m["name"]
        out["episode_id"] = f"{m['name']}/{m['split']}/episode_{ep:06d}"
        out["task"] = item["task"]
        out["robot"] = m["robot"]
        return out


def cpu_seconds(pids):
    """utime + stime of the processes, in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def run_once(samples, a, seed):
    import torch

    g = torch.Generator()
    g.manual_seed(seed)
    loader = torch.utils.data.DataLoader(samples, batch_size=a.batch_size, shuffle=True, generator=g,
                                         num_workers=a.workers, drop_last=True, persistent_workers=a.workers > 0)

    def batches():
        while True:  # epochs, as lerobot's train loop cycles its loader
            yield from loader

    it = batches()
    t_start = time.perf_counter()
    first = next(it)
    for _ in range(a.warmup - 1):
        next(it)
    pids = [os.getpid()] + ([w.pid for w in loader._iterator._workers] if a.workers else [])
    c0, t0 = cpu_seconds(pids), time.perf_counter()
    n = 0
    for _ in range(a.batches):
        n += len(next(it)["frame_index"])
    t1 = time.perf_counter()
    c1 = cpu_seconds(pids)
    if a.workers:
        loader._iterator._shutdown_workers()
    return first, {
        "samples": n, "wall_s": t1 - t0, "warmup_s": t0 - t_start,
        "samples_per_s": n / (t1 - t0), "cpu_s_per_sample": (c1 - c0) / n,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="an oxefs step-mode config (scripts/peer/lerobot_steps_b.yaml, ...)")
    ap.add_argument("--synth", help="replaces @SYNTH@ in the spec")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch-size", type=int, help="default: the spec's batch_size")
    ap.add_argument("--warmup", type=int, help="batches drawn before the timing starts (default: --workers)")
    ap.add_argument("--batches", type=int, help="batches timed per run (default: 4 × --workers)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--video-backend", choices=["auto", "pyav", "torchcodec"], default="auto",
                    help="auto: torchcodec when it loads, else pyav")
    ap.add_argument("--resize", choices=["interpolate", "torchvision"], default="interpolate")
    ap.add_argument("--only-spec-cameras", action="store_true",
                    help="decode only the cameras the spec maps (LeRobotDataset decodes all)")
    a = ap.parse_args()
    a.warmup = max(a.warmup or a.workers, 1)
    a.batches = a.batches or 4 * max(a.workers, 1)

    import torch

    backend = a.video_backend
    if backend == "auto":
        try:
            import torchcodec.decoders  # noqa: F401  (loads FFmpeg: fails without a matching one)

            backend = "torchcodec"
        except Exception:
            backend = "pyav"
    spec = Spec(a.spec, a.synth)
    a.batch_size = a.batch_size or spec.batch_size
    samples = StepSamples(spec, backend, a.resize, a.only_spec_cameras)
    runs = []
    for r in range(a.runs):
        first, res = run_once(samples, a, spec.seed + r)
        runs.append(res)
        print(f"run {r + 1}: {res['samples_per_s']:.1f} samples/s, {res['cpu_s_per_sample'] * 1e3:.1f} CPU ms/sample",
              file=sys.stderr)
        if r == 0:
            for k, v in first.items():
                desc = f"{str(v.dtype).replace('torch.', '')} {list(v.shape)}" if hasattr(v, "shape") else f"{len(v)} str"
                print(f"  {k}: {desc}", file=sys.stderr)
    from importlib.metadata import version

    print(json.dumps({
        "spec": a.spec, "lerobot": version("lerobot"), "torch": torch.__version__,
        "video_backend": backend, "resize": a.resize, "only_spec_cameras": a.only_spec_cameras,
        "workers": a.workers, "batch_size": a.batch_size, "warmup": a.warmup, "batches": a.batches,
        "datasets": [{k: m[k] for k in ("name", "dataset_index", "fps", "episodes", "frames", "cameras",
                                         "delta_timestamps")} for m in samples.meta],
        "runs": runs,
        "samples_per_s": statistics.median(r["samples_per_s"] for r in runs),
        "cpu_s_per_sample": statistics.median(r["cpu_s_per_sample"] for r in runs),
    }))


if __name__ == "__main__":
    main()
