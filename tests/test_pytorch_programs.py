"""Ordinary PyTorch programs (examples/pytorch_programs/), written as PyTorch users write them
with only the import changed, run under tritongrad: each must train to its usual loss."""

from __future__ import annotations

import pathlib
import random

import pytest

import tritongrad as tg
from tests.helpers import load_module

PROGRAMS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "pytorch_programs"

# program -> (keyword arguments of its main, the loss it must get below). The bounds leave
# room above what the programs reach (in parentheses) and sit far below where they start.
EXPECTED = {
    "polynomial_autograd": ({"steps": 2000}, 20.0),   # (9.1; it starts in the thousands)
    "custom_function": ({"steps": 2000}, 15.0),       # (8.94, as torch gives)
    "nn_sequential": ({"steps": 2000}, 20.0),         # (9.1)
    "dynamic_net": ({"steps": 6000}, 400.0),          # (101)
    "regression_pipeline": ({"epochs": 30}, 0.2),     # (0.08 validation MSE)
    "char_lstm": ({"steps": 80}, 1.0),                # (0.32; it starts at ln 24 = 3.2)
    "resnet_checkpoint": ({"epochs": 4}, 0.05),       # (0.0 held-out error; chance is 0.75)
    "transformer_classifier": ({"steps": 120}, 0.1),  # (0.008 held-out error)
    "wgan_gp": ({"steps": 300}, 1.2),                 # (0.37 from the target mean; 3.2 at start)
    "per_sample_grads": ({"steps": 60}, 0.8),         # (0.55; ln 3 = 1.1 at start)
    "vae_digits": ({"epochs": 15}, 30.0),             # (24.7 held-out -ELBO; ~44 at start)
    "seq2seq_transformer": ({"steps": 500}, 0.3),     # (0.095 held-out sequence error)
    "finetune_frozen": ({"epochs": 12}, 0.25),        # (0.12 held-out error; chance 0.8)
    "gnn_message_passing": ({"epochs": 30}, 0.35),    # (0.19 held-out node error; chance 0.5)
    "reinforce_gridworld": ({"episodes": 300}, 2.0),  # (0.0 steps above the shortest path;
                                                      # a policy that never arrives: ~15)
    "packed_gru": ({"steps": 150}, 0.25),             # (0.12 held-out error; chance 0.5)
    "unet_segmentation": ({"steps": 60}, 0.3),        # (0.11 = 1 - held-out IoU; ~0.8 at start)
    "contrastive_distill": ({"epochs": 8}, 0.3),      # (0.14 student held-out error; chance 0.9)
    "vit_digits": ({"epochs": 8}, 0.08),              # (0.030 EMA held-out error, as torch
                                                      # gives; chance 0.9)
    "dcgan_digits": ({"epochs": 4}, 0.5),             # (0.28-0.35 pixel mean/std gap over
                                                      # seeds, torch 0.28-0.31; 1.0 at start)
    "pinn_ode": ({"adam_steps": 400, "lbfgs_steps": 3}, 0.01),  # (2e-4-6e-4 max error, torch
                                                      # 8e-4-2e-3; ~1 at start)
    "moe_digits": ({"epochs": 8}, 0.06),              # (0.013-0.025 held-out error; chance 0.9)
    "lora_finetune": ({"epochs": 12}, 0.2),           # (0.06-0.10 rotated held-out error, torch
                                                      # 0.07-0.09; 0.88 before the adapters)
    "maml_sine": ({"meta_steps": 300}, 2.0),          # (0.84-1.44 MSE after adapting, torch
                                                      # 0.94-1.42; ~3.8 unadapted)
    "gp_regression": ({"steps": 100}, 0.15),          # (0.083 test RMSE, torch 0.10 on its
                                                      # own draws; the noise is 0.1)
    "realnvp_flow": ({"steps": 400}, 0.9),            # (0.57 held-out nats, torch 0.67; 2.5
                                                      # before training)
    "ddpm_ring": ({"steps": 600}, 0.2),               # (0.083 from the ring, torch 0.088; pure
                                                      # noise ~0.6)
}


def _load(name: str):
    return load_module(PROGRAMS / f"{name}.py", f"program_{name}")


def test_every_program_is_run():
    assert {p.stem for p in PROGRAMS.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_program_trains(name):
    kwargs, bound = EXPECTED[name]
    tg.manual_seed(0)
    random.seed(0)
    loss = _load(name).main(verbose=False, **kwargs)
    assert loss < bound
