"""A toy DDP model trained on an oxefs mount: torchrun --nproc_per_node N examples/torchrun_train.py MOUNT (see the README)."""
import sys, torch, torch.distributed as dist, oxefs  # noqa: E401 (pip install ./python, or PYTHONPATH=python)

dist.init_process_group("gloo")  # "nccl" on GPUs; each rank reads MOUNT/rank/RANK of an `oxefs mount --ranks` daemon
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, oxefs.read_info(sys.argv[1])["action_dim"]))
opt, steps = torch.optim.SGD(model.parameters(), lr=1e-3), 0
for b in oxefs.Loader(sys.argv[1], torch=True, stop=int(sys.argv[2]) if len(sys.argv) > 2 else None):
    x = b["frames"].float().mean(dim=tuple(range(1, b["frames"].dim()))).unsqueeze(1) / 255  # one feature per sample
    loss = ((model(x) - b["action"]) ** 2 * b["action_mask"]).mean()  # padded action dims do not count
    opt.zero_grad(), loss.backward(), opt.step()
    steps += 1
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {steps} steps, last loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
