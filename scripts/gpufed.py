"""Can oxefs feed a model training on this machine's GPU?

    python3 scripts/gpufed.py MIX.yaml [--models resnet18,vit_b_16] [--steps 300] [--warmup 30]
                              [--binary BIN] [--workers N] [--json OUT.json]

For each model, trained in bf16 (autocast, AdamW) on the stacked pair (the
frames of a sample concatenated on channels: [B, 3F, H, W]) regressing the
sample's actions:

  resident  one batch kept on the GPU, trained on STEPS times: the rate the
            GPU reaches when data costs nothing;
  fed       batches read from a mount of MIX by oxefs.Loader (read ahead on
            a thread, pinned, copied to the GPU with non_blocking), one new
            batch per step;
  gpu       the same from a second mount of MIX with `decode: gpu`: JPEG
            frames served compressed and decoded, resized and augmented
            on the GPU by oxefs.Loader(device=...) (nvJPEG).

It prints, per model and feeding: samples/s, fed ÷ resident, the time the
trainer waited for its next batch (share of the measured time), and CPU ms
per sample of the daemon and of the trainer process. The daemon runs with
--workers N (default: every core) and a short --grace.

ResNet-18 is small enough that a fast GPU outruns the loader's CPU; ResNet-50
and ViT-B/16 are large enough that they should not. Without a CUDA GPU the script says so
and exits 0; --device cpu runs the same code on the CPU with tiny steps (a
smoke test, not a measurement).
"""
import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def cpu_of(pid):
    """User+system CPU seconds of process pid, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_self():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_model(name, in_ch, size, out_dim):
    import torch.nn as nn
    import torchvision.models as tvm

    if name == "resnet18":
        m = tvm.resnet18(num_classes=out_dim)
        m.conv1 = nn.Conv2d(in_ch, 64, kernel_size=7, stride=2, padding=3, bias=False)
        return m
    if name == "resnet50":
        m = tvm.resnet50(num_classes=out_dim)
        m.conv1 = nn.Conv2d(in_ch, 64, kernel_size=7, stride=2, padding=3, bias=False)
        return m
    if name == "vit_b_16":
        if size % 16:
            raise SystemExit(f"vit_b_16 needs an image side divisible by 16, the mix serves {size}")
        m = tvm.vit_b_16(image_size=size, num_classes=out_dim)
        m.conv_proj = nn.Conv2d(in_ch, m.hidden_dim, kernel_size=16, stride=16)
        return m
    raise SystemExit(f"unknown model {name!r}: valid are resnet18, resnet50, vit_b_16")


class Trainer:
    """One model, its optimiser, and a step on a batch already on the device."""

    def __init__(self, name, layout, frames_shape, action_dim, device):
        import torch

        self.torch, self.device, self.layout = torch, device, layout
        if layout == "BCFHW":
            _, c, f, h, w = frames_shape
        else:
            _, f, h, w, c = frames_shape
        self.in_ch = c * f
        self.model = build_model(name, self.in_ch, h, action_dim).to(device)
        self.model = self.model.to(memory_format=torch.channels_last)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def inputs(self, frames, action, mask):
        """uint8 frames and float actions on the device → the model's input and target."""
        t = self.torch
        if self.layout == "BCFHW":
            b, c, f, h, w = frames.shape
            x = frames.reshape(b, c * f, h, w)
        else:
            b, f, h, w, c = frames.shape
            x = frames.permute(0, 1, 4, 2, 3).reshape(b, f * c, h, w)
        x = x.contiguous(memory_format=t.channels_last).to(t.bfloat16).div_(255.0)
        y = t.nan_to_num(action.float()) * mask.float()
        return x, y, mask.float()

    def step(self, x, y, mask):
        t = self.torch
        with t.autocast(device_type=self.device.type, dtype=t.bfloat16):
            pred = self.model(x)
        loss = (((pred.float() - y) ** 2) * mask).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss


def sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def to_device(batch, device, non_blocking):
    mask = batch.get("action_mask")
    action = batch["action"]
    if mask is None:
        import torch

        mask = torch.ones_like(action)
    return (batch["frames"].to(device, non_blocking=non_blocking),
            action.to(device, non_blocking=non_blocking),
            mask.to(device, non_blocking=non_blocking))


def fed(m, tr, start, stop, warmup, device, pin, decode_on=None):
    """Trains tr on batches [start, stop) of mount m read by oxefs.Loader,
    measuring all but the first warmup steps; decode_on: the device a
    decode: gpu mount's frames are decoded on."""
    import oxefs
    import torch

    pid = m.process.pid
    it = iter(oxefs.Loader(m, start=start, stop=stop, torch=True, pin_memory=pin, readahead=4, device=decode_on))
    wait, waits, samples = 0.0, [], 0
    for i in range(stop - start):
        if i == warmup:
            sync(torch, device)
            d0, c0, t0, wait = cpu_of(pid), cpu_self(), time.perf_counter(), 0.0
        w0 = time.perf_counter()
        b = next(it)
        dt = time.perf_counter() - w0
        if i >= warmup:
            wait += dt
            waits.append(dt)
            samples += b["frames"].shape[0]
        tr.step(*tr.inputs(*to_device(b, device, pin)))
        del b
    sync(torch, device)
    t1, d1, c1 = time.perf_counter(), cpu_of(pid), cpu_self()
    del it
    secs = t1 - t0
    return {
        "fed_samples_per_s": round(samples / secs, 1),
        "wait_share": round(wait / secs, 3),
        "wait_ms_per_step_median": round(1e3 * statistics.median(waits), 2),
        "daemon_cpu_ms_per_sample": round(1e3 * (d1 - d0) / samples, 3),
        "trainer_cpu_ms_per_sample": round(1e3 * (c1 - c0) / samples, 3),
    }


def decode_gpu_mix(config):
    """A copy of the mix config with `decode: gpu` (next to it, so that its
    relative paths hold)."""
    with open(config) as f:
        lines = [ln for ln in f.read().splitlines() if not ln.startswith("decode:")]
    path = os.path.join(os.path.dirname(os.path.abspath(config)), "." + os.path.basename(config) + ".decode-gpu.yaml")
    with open(path, "w") as f:
        f.write("decode: gpu\n" + "\n".join(lines) + "\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="mix config (YAML) to mount")
    ap.add_argument("--models", default="resnet18,resnet50,vit_b_16")
    ap.add_argument("--steps", type=int, default=300, help="measured steps per model and feeding")
    ap.add_argument("--warmup", type=int, default=30, help="unmeasured steps before each measurement")
    ap.add_argument("--binary", default=None, help="oxefs binary (default: $OXEFS_BIN or PATH)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="the daemon's decode workers")
    ap.add_argument("--mount-arg", action="append", default=[], help="another flag for oxefs mount (repeatable)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (a smoke test)")
    ap.add_argument("--feeds", default="pinned,pageable,gpu",
                    help="how fed batches reach the GPU: pinned (Loader pin_memory=True, copied with non_blocking), pageable (copied from the mapped file), "
                         "gpu (a decode: gpu mount of the mix, JPEG frames decoded on the device by Loader(device=...))")
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("gpufed: torch is not installed: nothing measured")
        return 0
    if a.device == "cuda" and not torch.cuda.is_available():
        print("gpufed: no CUDA GPU on this machine: nothing measured (--device cpu runs a smoke test)")
        return 0
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("gpufed: torchvision is not installed: nothing measured")
        return 0
    import oxefs

    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    models = [m for m in a.models.split(",") if m]
    feeds = [f for f in a.feeds.split(",") if f]
    for f in feeds:
        if f not in ("pinned", "pageable", "gpu"):
            raise SystemExit(f"--feeds: unknown feed {f!r}: valid are pinned, pageable, gpu")
    if device.type != "cuda" and "pinned" in feeds:
        feeds.remove("pinned")  # pinning needs an accelerator
        feeds = feeds or ["pageable"]
    args = ["--workers", str(a.workers), "--grace", "1s", *a.mount_arg]
    out = {"gpu": gpu, "cores": os.cpu_count(), "workers": a.workers, "steps": a.steps, "models": {}}
    print(f"gpufed: {gpu}, {os.cpu_count()} cores, daemon --workers {a.workers}, {a.steps} steps after {a.warmup}", flush=True)

    gpu_mix = None
    if "gpu" in feeds:
        gpu_mix = decode_gpu_mix(a.config)
    with oxefs.mount(a.config, binary=a.binary, args=args) as m, \
            (oxefs.mount(gpu_mix, binary=a.binary, args=args) if gpu_mix else contextlib.nullcontext()) as mg:
        layout = m.info.get("frames", {}).get("layout", "BFHWC")
        n = len(oxefs.Batches(m))
        need = len(models) * len(feeds) * (a.warmup + a.steps) + 1
        if n < need:
            raise SystemExit(f"the mount lists {n} batches, the run needs {need}: raise num_batches in {a.config}")
        first = oxefs.Batches(m, torch=True)[0]
        B = first["frames"].shape[0]
        shape, adim = tuple(first["frames"].shape), first["action"].shape[1]
        resident = tuple(v.clone() for v in to_device({k: first[k] for k in ("frames", "action", "action_mask") if k in first}, device, False))
        del first
        out.update(batch_size=B, frames=list(shape), layout=layout)
        next_batch = 1  # each model reads fresh indices: nothing is served twice from the page cache
        for name in models:
            tr = Trainer(name, layout, shape, adim, device)
            # Resident: the GPU's own rate on this model.
            x, y, mk = tr.inputs(*resident)
            for _ in range(a.warmup):
                tr.step(x, y, mk)
            sync(torch, device)
            t0 = time.perf_counter()
            for _ in range(a.steps):
                tr.step(x, y, mk)
            sync(torch, device)
            res_rate = a.steps * B / (time.perf_counter() - t0)
            del x, y, mk

            r = {"resident_samples_per_s": round(res_rate, 1)}
            print(f"{name:9s} resident {res_rate:7.0f} samples/s", flush=True)
            for feed in feeds:
                # Fed: a new batch from the mount each step.
                start, stop = next_batch, next_batch + a.warmup + a.steps
                next_batch = stop
                if feed == "gpu":
                    f = fed(mg, tr, start, stop, a.warmup, device, pin=False, decode_on=device)
                else:
                    f = fed(m, tr, start, stop, a.warmup, device, pin=feed == "pinned")
                f["fed_fraction"] = round(f["fed_samples_per_s"] / res_rate, 3)
                r[feed] = f
                print(f"{name:9s} {feed:8s} {f['fed_samples_per_s']:7.0f} samples/s = {f['fed_fraction']:.2f} of resident,"
                      f" waited {100 * f['wait_share']:.0f}% of the time (median {f['wait_ms_per_step_median']:.1f} ms/step),"
                      f" CPU ms/sample: daemon {f['daemon_cpu_ms_per_sample']:.3f}, trainer {f['trainer_cpu_ms_per_sample']:.3f}", flush=True)
            out["models"][name] = r
            del tr
            if device.type == "cuda":
                torch.cuda.empty_cache()
        del resident
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
