"""Policy-gradient reinforcement learning as a PyTorch user writes it: REINFORCE with a learned
baseline on a small grid world (written in plain Python), a policy network sampling actions
from torch.distributions.Categorical, log_prob and entropy bonus, discounted returns computed
backwards, advantage normalisation, and one optimizer over two heads."""

import random

import tritongrad as torch
import tritongrad.nn as nn
from tritongrad.distributions import Categorical

SIZE, GOAL, MAX_STEPS = 5, (4, 4), 20
MOVES = ((0, 1), (1, 0), (0, -1), (-1, 0))


def observe(pos):
    obs = torch.zeros(SIZE * SIZE)
    obs[pos[0] * SIZE + pos[1]] = 1.0
    return obs


def step(pos, action):
    dr, dc = MOVES[action]
    nxt = (min(max(pos[0] + dr, 0), SIZE - 1), min(max(pos[1] + dc, 0), SIZE - 1))
    done = nxt == GOAL
    return nxt, (1.0 if done else -0.05), done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(SIZE * SIZE, 64), nn.Tanh())
        self.policy = nn.Linear(64, 4)
        self.value = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        return Categorical(logits=self.policy(h)), self.value(h).squeeze(-1)


def episode(model, rng):
    pos = (rng.randrange(SIZE), rng.randrange(SIZE - 1))
    log_probs, values, entropies, rewards = [], [], [], []
    for _ in range(MAX_STEPS):
        dist, value = model(observe(pos))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        entropies.append(dist.entropy())
        values.append(value)
        pos, reward, done = step(pos, action.item())
        rewards.append(reward)
        if done:
            break
    return log_probs, values, entropies, rewards


def main(episodes: int = 300, verbose: bool = True) -> float:
    torch.manual_seed(0)
    rng = random.Random(0)
    model = ActorCritic()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gamma, lengths = 0.97, []
    for ep in range(episodes):
        log_probs, values, entropies, rewards = episode(model, rng)
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + gamma * g
            returns.insert(0, g)
        returns = torch.tensor(returns)
        values = torch.stack(values)
        adv = returns - values.detach()
        if len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        loss = (-(torch.stack(log_probs) * adv).sum()
                + 0.5 * nn.functional.mse_loss(values, returns, reduction="sum")
                - 0.01 * torch.stack(entropies).sum())
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        lengths.append(len(rewards))
        if verbose and ep % 100 == 99:
            print(f"episode {ep + 1}: mean length of the last 100 {sum(lengths[-100:]) / 100:.1f}")
    with torch.no_grad():  # greedy policy from every start: steps to the goal, as a fraction
        total = 0
        for r0 in range(SIZE):
            for c0 in range(SIZE):
                pos, n = (r0, c0), 0
                while pos != GOAL and n < MAX_STEPS:
                    dist, _ = model(observe(pos))
                    pos, _, _ = step(pos, dist.probs.argmax().item())
                    n += 1
                total += n - (abs(GOAL[0] - r0) + abs(GOAL[1] - c0))
    excess = total / (SIZE * SIZE)
    if verbose:
        print(f"greedy policy: {excess:.2f} steps above the shortest path per start")
    return excess


if __name__ == "__main__":
    main()
