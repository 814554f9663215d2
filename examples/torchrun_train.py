"""A toy DDP model trained through oxefs, one process per GPU (see the README's "Multi-GPU training"):

    python3 -m torch.distributed.run --standalone --nproc_per_node N examples/torchrun_train.py SOURCE [--steps S] [oxefs mount flags]

SOURCE is a mix config: each rank calls oxefs.mount(SOURCE), and the node's
ranks share one daemon (--ranks over them), each reading its own
rank/RANK; flags this script does not know (--mem 16GiB) go to that
daemon. Or SOURCE is the mountpoint of an `oxefs mount --ranks` daemon
already running. Needs the package: pip install ./python, or PYTHONPATH=python.
"""
import argparse
import contextlib
import os

import torch
import torch.distributed as dist

import oxefs

p = argparse.ArgumentParser(description="A toy DDP model trained through oxefs (run it with torchrun).")
p.add_argument("source", help="a mix config to mount, or the mountpoint of a running `oxefs mount --ranks` daemon")
p.add_argument("--steps", type=int, default=None, help="stop after this many batches (default: the whole epoch)")
a, mount_flags = p.parse_known_args()
dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
with contextlib.ExitStack() as stack:
    mnt = a.source if os.path.isdir(a.source) else stack.enter_context(oxefs.mount(a.source, args=mount_flags))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, oxefs.read_info(mnt)["action_dim"]))
    opt, steps = torch.optim.SGD(model.parameters(), lr=1e-3), 0
    for b in oxefs.Loader(mnt, torch=True, stop=a.steps):
        x = b["frames"].float().mean(dim=tuple(range(1, b["frames"].dim()))).unsqueeze(1) / 255  # one feature per sample
        loss = ((model(x) - b["action"]) ** 2 * b["action_mask"]).mean()  # padded action dims do not count
        opt.zero_grad(), loss.backward(), opt.step()
        steps += 1
    daemon = getattr(mnt, "pid", "started outside")
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {steps} steps, last loss {loss.item():.4f}, daemon {daemon}", flush=True)
dist.destroy_process_group()
