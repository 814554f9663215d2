#!/usr/bin/env python3
"""Train a lerobot policy on an oxefs mount, with no glue (README:
"Training a LeRobot policy").

    python3 examples/lerobot_train.py MIX.yaml [--policy act|diffusion] [--steps N] [--device cuda]
                                      [--cache-dir DIR] [--no-pretrained]

MIX.yaml is a step-mode mix (any LeRobot and RLDS datasets) whose deltas
are the policy's: ACT wants its chunk of actions (action: {steps: "0:100"});
Diffusion Policy 2 steps of history for cameras and state and a horizon of
actions from t−1. Run `oxefs stats --config MIX.yaml --cache-dir DIR`
once first: the policy's normalisation comes from those statistics. Needs
lerobot (0.4.4) and torch 2.
"""

import argparse

import torch

import oxefs
import oxefs.lerobot


def policy_config(kind, device, **kw):
    """A lerobot policy config: small, no pretrained weights."""
    if kind == "act":
        from lerobot.policies.act.configuration_act import ACTConfig

        return ACTConfig(device=device, **kw)
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig

    return DiffusionConfig(device=device, **kw)


def train(mnt, cfg, steps, device, quantiles="exact", on_step=None, seed=None):
    """Trains cfg's policy for steps batches of the mount; returns the
    losses. on_step(step, batch, loss) sees each step; seed, when set,
    seeds torch before each step with seed + step (the same noise for a
    test to compare against)."""
    from lerobot.policies.factory import make_policy, make_pre_post_processors

    meta = oxefs.lerobot.Meta(mnt, quantiles=quantiles)          # features and statistics of the mix
    policy = make_policy(cfg, ds_meta=meta)
    preprocess, _ = make_pre_post_processors(cfg, dataset_stats=meta.stats)
    optimizer = cfg.get_optimizer_preset().build(policy.get_optim_params())
    policy.train()
    losses = []
    N = len(oxefs.Batches(mnt))
    for epoch in range(steps // N + 1):
        for batch in oxefs.lerobot.Loader(mnt, device=device, epoch=epoch):  # frames become floats on the device
            if len(losses) == steps:
                return losses
            if seed is not None:
                torch.manual_seed(seed + len(losses))
            loss, _ = policy.forward(preprocess(batch))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            if on_step is not None:
                on_step(len(losses) - 1, batch, loss)
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mix")
    ap.add_argument("--policy", choices=["act", "diffusion"], default="act")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--no-pretrained", action="store_true", help="no ImageNet weights for the vision backbone (nothing downloaded)")
    a = ap.parse_args()
    args = ["--cache-dir", a.cache_dir] if a.cache_dir else []
    with oxefs.mount(a.mix, args=args) as mnt:
        # The policy's chunk and history are the mix's deltas.
        d = oxefs.lerobot.deltas(mnt)
        if a.policy == "act":
            kw = {"chunk_size": len(d["action"]), "n_action_steps": len(d["action"])}
        else:
            kw = {"n_obs_steps": len(d["observation.state"]), "horizon": len(d["action"])}
        if a.no_pretrained:
            kw["pretrained_backbone_weights"] = None
        cfg = policy_config(a.policy, a.device, **kw)
        for step, loss in enumerate(train(mnt, cfg, a.steps, a.device)):
            print(f"step {step} loss {loss:.4f}")


if __name__ == "__main__":
    main()
