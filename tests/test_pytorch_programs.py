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
# room above what the programs reach and sit far below where they start. In parentheses: what
# tritongrad reaches and what PyTorch 2.13 reaches on the CPU with only the import changed,
# from the same seeds (session 25): the CPU random streams are PyTorch's, so the weights,
# batches and dropout masks are PyTorch's too, and most programs land on PyTorch's number to
# float32 rounding; the others (GANs, the longer Transformer runs) drift apart with rounding.
EXPECTED = {
    "polynomial_autograd": ({"steps": 2000}, 20.0),   # (12.29, torch 12.29; thousands at start)
    "custom_function": ({"steps": 2000}, 15.0),       # (8.944, torch 8.944)
    "nn_sequential": ({"steps": 2000}, 20.0),         # (9.177, torch 9.177)
    "dynamic_net": ({"steps": 6000}, 800.0),          # (520.37, torch 520.37; 3.9e6 at start)
    "regression_pipeline": ({"epochs": 30}, 0.2),     # (0.0605 validation MSE, torch 0.0605)
    "char_lstm": ({"steps": 80}, 1.0),                # (0.331, torch 0.331; ln 24 = 3.2 at start)
    "resnet_checkpoint": ({"epochs": 4}, 0.05),       # (0.0 held-out error, torch 0.0; chance
                                                      # 0.75)
    "transformer_classifier": ({"steps": 120}, 0.1),  # (0.0 held-out error, torch 0.0)
    "wgan_gp": ({"steps": 300}, 1.5),                 # (1.03 from the target mean, torch 1.02;
                                                      # 3.2 at start)
    "per_sample_grads": ({"steps": 60}, 0.8),         # (0.483, torch 0.483; ln 3 = 1.1 at start)
    "vae_digits": ({"epochs": 15}, 30.0),             # (24.99 held-out -ELBO, torch 24.99; ~44
                                                      # at start)
    "seq2seq_transformer": ({"steps": 500}, 0.3),     # (0.115 held-out sequence error, torch
                                                      # 0.095)
    "finetune_frozen": ({"epochs": 12}, 0.25),        # (0.156 held-out error, torch 0.134;
                                                      # chance 0.8)
    "gnn_message_passing": ({"epochs": 30}, 0.35),    # (0.148 held-out node error, torch 0.148;
                                                      # chance 0.5)
    "reinforce_gridworld": ({"episodes": 300}, 2.0),  # (0.0 steps above the shortest path,
                                                      # torch 0.0; a policy that never
                                                      # arrives: ~15)
    "packed_gru": ({"steps": 150}, 0.25),             # (0.11 held-out error, torch 0.11; chance
                                                      # 0.5)
    "unet_segmentation": ({"steps": 60}, 0.3),        # (0.112 = 1 - held-out IoU, torch 0.113;
                                                      # ~0.8 at start)
    "contrastive_distill": ({"epochs": 8}, 0.3),      # (0.128 student held-out error, torch
                                                      # 0.128; chance 0.9)
    "vit_digits": ({"epochs": 8}, 0.08),              # (0.038 EMA held-out error, torch 0.030;
                                                      # chance 0.9)
    "dcgan_digits": ({"epochs": 4}, 0.5),             # (0.275 pixel mean/std gap, torch 0.275;
                                                      # 1.0 at start)
    "pinn_ode": ({"adam_steps": 400, "lbfgs_steps": 3}, 0.01),  # (5e-4 max error, torch 8e-4;
                                                      # ~1 at start)
    "moe_digits": ({"epochs": 8}, 0.06),              # (0.0227 held-out error, torch 0.0227;
                                                      # chance 0.9)
    "lora_finetune": ({"epochs": 12}, 0.2),           # (0.068 rotated held-out error, torch
                                                      # 0.068; 0.88 before the adapters)
    "maml_sine": ({"meta_steps": 300}, 2.0),          # (1.423 MSE after adapting, torch 1.423;
                                                      # ~3.8 unadapted)
    "gp_regression": ({"steps": 100}, 0.15),          # (0.1008 test RMSE, torch 0.1008; the
                                                      # noise is 0.1)
    "realnvp_flow": ({"steps": 400}, 0.9),            # (0.6665 held-out nats, torch 0.6665; 2.5
                                                      # before training)
    "rope_gpt": ({"steps": 80}, 0.6),                 # (0.2989 held-out loss, torch 0.2990
                                                      # with bfloat16 autocast; ln 30 = 3.4 at
                                                      # start)
    "ddpm_ring": ({"steps": 600}, 0.2),               # (0.0877 from the ring, torch 0.0877; pure
                                                      # noise ~0.6)
    "tensor_subclass_mode": ({"steps": 200}, 0.1),    # (0.07688 MSE, torch 0.07688; the program
                                                      # also checks tags and FLOP counts)
    "hogwild": ({"epochs": 3}, 0.01),                 # (0.0025 MSE after 4 processes train
                                                      # one shared model, torch 0.0025, both
                                                      # varying in the 4th digit with the
                                                      # races; 8.57 at start, noise 0.0025)
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
