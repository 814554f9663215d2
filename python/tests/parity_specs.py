"""The mixes and policies of the lerobot parity test (lerobot_parity.py,
test_lerobot.py): each a step-mode mix of the fixture lerobot_av1 with a
policy's deltas, LeRobotDataset's delta_timestamps for the same, and a
tiny lerobot policy config (no pretrained weights)."""

FPS = 10
CAMS = {"top": "observation.images.top", "wrist": "observation.images.wrist", "side": "observation.images.side"}


def _secs(steps):
    return [round(s / FPS, 6) for s in steps]


SPECS = [
    {
        # ACT: one frame per camera and the state at t, a chunk of 5.
        "name": "act",
        "policy": "act",
        "steps": 3,
        "slot_deltas": [0],
        "state_deltas": [0],
        "action_deltas": list(range(0, 5)),
        "config": {"chunk_size": 5, "n_action_steps": 5, "dim_model": 32, "n_heads": 2, "dim_feedforward": 64,
                   "n_encoder_layers": 1, "n_decoder_layers": 1, "n_vae_encoder_layers": 1, "latent_dim": 8,
                   "pretrained_backbone_weights": None},
    },
    {
        # Diffusion Policy: 2 steps of history, a horizon of 8 from t−1.
        "name": "diffusion",
        "policy": "diffusion",
        "steps": 3,
        "slot_deltas": [-1, 0],
        "state_deltas": [-1, 0],
        "action_deltas": list(range(-1, 7)),
        "config": {"n_obs_steps": 2, "horizon": 8, "n_action_steps": 4, "down_dims": (16, 32), "kernel_size": 3,
                   "n_groups": 4, "diffusion_step_embed_dim": 16, "spatial_softmax_num_keypoints": 8,
                   "num_train_timesteps": 10, "pretrained_backbone_weights": None, "crop_shape": None},
    },
]

for _s in SPECS:
    _s["delta_timestamps"] = {**{k: _secs(_s["slot_deltas"]) for k in CAMS.values()},
                              "observation.state": _secs(_s["state_deltas"]), "action": _secs(_s["action_deltas"])}
    if _s["policy"] == "act":
        # ACT gives lerobot no deltas for its observations.
        _s["delta_timestamps"] = {"action": _s["delta_timestamps"]["action"]}


def mix_yaml(spec, root):
    """The mix config of a spec, the fixture at root."""
    steps = lambda d: "[" + ", ".join(str(x) for x in d) + "]"  # noqa: E731
    cams = "\n".join(f"    {n}: {{size: [48, 64], steps: {steps(spec['slot_deltas'])}}}" for n in CAMS)
    return f"""batch_size: 4
samples_per_episode: 0
seed: 38
sample:
  cameras:
{cams}
  state: {{steps: {steps(spec['state_deltas'])}}}
  action: {{steps: {steps(spec['action_deltas'])}}}
datasets:
  - name: lr
    source: {root}
    split: train
    cameras: {{{", ".join(f"{n}: {k}" for n, k in CAMS.items())}}}
    action_keys: [action]
    state_key: observation.state
    language_key: task
"""
