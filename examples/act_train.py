"""A small ACT-like policy trained on a step-mode oxefs mount.

Run from the repository (or after `pip install ./python`):

    python3 examples/act_train.py MOUNT [--steps 100] [--dataloader --workers 4]

MOUNT is a mounted directory, or a mix config (.yaml) that the script mounts
itself for the run. Its mix must have a `sample:` block (step mode): camera
slots with their history, and an action chunk. Each batch is a dict of
tensors keyed like LeRobot's; the model is ACT's shape without its CVAE:

- one conv encoder per camera slot turns each frame of its history into a
  token (plus a learned embedding per slot and history step);
- the state history, flattened, is one more token;
- a transformer encoder-decoder reads those tokens, and one learned query
  per chunk step predicts that step's action (DETR-style, as ACT does);
- the loss is L1 over the chunk, counting only real steps (action_is_pad
  false) and real action dims (action_mask true).

A slot the sample's dataset lacks (image_mask 0) is masked out of
attention. Frames come from oxefs.Loader (read ahead on a thread, no
workers) as uint8 [B, T, 3, H, W] views (channels_first=True); they go to
the device as uint8 and become floats there. --dataloader reads through a
torch DataLoader with worker processes over oxefs.Batches instead.

It prints the loss at every step and exits non-zero if a loss is not
finite. --overfit trains on the first batch only (a loss that does not
fall there is a bug in the data or the model).
"""

import argparse
import contextlib
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import oxefs  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


class CameraEncoder(nn.Module):
    """Frames [N, 3, H, W] (float) to one d-wide feature each, whatever H, W."""

    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 32, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(64, d, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )

    def forward(self, x):
        return self.net(x)


class ACTLike(nn.Module):
    """Camera tokens and a state token in, a chunk of actions out."""

    def __init__(self, slots, state_shape, chunk, action_dim, d=64, heads=4, layers=2):
        super().__init__()
        self.slots = [name for name, _ in slots]
        self.cameras = nn.ModuleList(CameraEncoder(d) for _ in slots)
        self.frame_pos = nn.ParameterList(nn.Parameter(torch.randn(steps, d) * 0.02) for _, steps in slots)
        self.state = nn.Linear(state_shape[0] * state_shape[1], d) if state_shape else None
        self.state_pos = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.transformer = nn.Transformer(
            d_model=d, nhead=heads, num_encoder_layers=layers, num_decoder_layers=layers,
            dim_feedforward=4 * d, dropout=0.0, batch_first=True,
        )
        self.queries = nn.Parameter(torch.randn(chunk, d) * 0.02)
        self.head = nn.Linear(d, action_dim)

    def forward(self, batch):
        tokens, ignore = [], []
        for k, slot in enumerate(self.slots):
            x = batch[f"observation.images.{slot}"]  # uint8 [B, T, 3, H, W]
            b, t = x.shape[:2]
            x = x.reshape(b * t, *x.shape[2:]).float().div_(255).sub_(0.5).div_(0.5)
            tokens.append(self.cameras[k](x).view(b, t, -1) + self.frame_pos[k])
            # A slot the sample's dataset has no camera for: not attended to.
            ignore.append((~batch["image_mask"][:, k]).unsqueeze(1).expand(b, t))
        b = batch["image_mask"].shape[0]
        state = self.state_pos.expand(b, 1, -1)
        if self.state is not None:
            state = state + self.state(batch["observation.state"].flatten(1)).unsqueeze(1)
        tokens.append(state)
        ignore.append(torch.zeros(b, 1, dtype=torch.bool, device=state.device))
        src, mask = torch.cat(tokens, 1), torch.cat(ignore, 1)
        out = self.transformer(src, self.queries.expand(b, -1, -1), src_key_padding_mask=mask, memory_key_padding_mask=mask)
        return self.head(out)  # [B, H, A]


def chunk_l1(pred, batch):
    """L1 over real chunk steps and real action dims only."""
    weight = ((~batch["action_is_pad"]).unsqueeze(-1) & batch["action_mask"].unsqueeze(1)).float()
    return ((pred - batch["action"]).abs() * weight).sum() / weight.sum().clamp(min=1)


def model_for(info):
    """An ACTLike sized from a step-mode mount's info.json."""
    sample = info.get("sample")
    if sample is None:
        sys.exit("act_train: the mount serves pairs; its mix needs a sample: block (step mode)")
    shapes = {a["name"]: a["shape"] for a in sample["arrays"]}
    if "action" not in shapes:
        sys.exit("act_train: the mount's batches have no action array (its mix's widest action dim is 0)")
    slots = [(s["name"], shapes[f"observation.images.{s['name']}_is_pad"][1]) for s in sample["slots"]]
    state = shapes.get("observation.state")
    _, chunk, action_dim = shapes["action"]
    return ACTLike(slots, state[1:] if state else None, chunk, action_dim)


def batches(mount, args, pin):
    """args.steps batches from args.start: through oxefs.Loader, or a DataLoader."""
    if args.dataloader:
        from torch.utils.data import DataLoader

        ds = oxefs.Batches(mount, torch=True, channels_first=True)
        # A mount's train view serves later epochs by index, up to
        # ds.max_batch; a plain directory holds one epoch: repeat it.
        order = [i if i <= ds.max_batch else i % len(ds) for i in range(args.start, args.start + args.steps)]
        return DataLoader(ds, batch_size=None, sampler=order, num_workers=args.workers, pin_memory=pin)
    stop = args.start + (1 if args.overfit else args.steps)
    return oxefs.Loader(mount, torch=True, channels_first=True, pin_memory=pin, start=args.start, stop=stop)


def train(mount, args):
    torch.manual_seed(args.seed)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model = model_for(oxefs.read_info(mount)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    source = batches(mount, args, pin=device.type == "cuda")
    if args.overfit:
        first = next(iter(source))
        source = (first for _ in range(args.steps))
    losses = []
    for step, batch in enumerate(source):
        # uint8 frames travel as they are; .float() happens on the device.
        batch = {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}
        loss = chunk_l1(model(batch), batch)
        value = loss.item()
        print(f"step {step} loss {value:.6f}", flush=True)
        if not math.isfinite(value):
            sys.exit(f"act_train: step {step}: loss {value} is not finite (batch {args.start + step}, datasets {sorted(set(batch.get('dataset_name', [])))})")
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(value)
    if not losses:
        sys.exit("act_train: no batches read")
    print(f"done: {len(losses)} steps, first loss {losses[0]:.6f}, last loss {losses[-1]:.6f}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mount", help="a step-mode mount, or a mix config (.yaml) to mount for the run")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--start", type=int, default=0, help="first batch index (resume a run here)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    p.add_argument("--overfit", action="store_true", help="train on the first batch only")
    p.add_argument("--dataloader", action="store_true", help="a torch DataLoader over oxefs.Batches instead of oxefs.Loader")
    p.add_argument("--workers", type=int, default=2, help="the DataLoader's worker processes")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps {args.steps}: need at least 1")
    with contextlib.ExitStack() as stack:
        mount = args.mount
        if mount.endswith((".yaml", ".yml")):
            mount = stack.enter_context(oxefs.mount(mount))
        train(mount, args)


if __name__ == "__main__":
    main()
