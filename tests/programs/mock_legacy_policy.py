"""An offline REINFORCE policy update written in the old (0.3/0.4-era) PyTorch style:
``torch.autograd.Variable`` wrappers, ``torch.FloatTensor(...)``/``torch.LongTensor(...)``
constructors, ``.type(torch.FloatTensor)``, discounted returns built in a Python list and
normalised with ``.std()``, ``torch.distributions.Categorical(logits=...)`` with ``log_prob`` and
``entropy``, ``torch.cat`` of per-step losses, RMSprop, and scalars read with ``.data[0]`` and
``.item()``. The episodes (state, action, reward) are a fixed dataset from a numpy RandomState.
Plain PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must print the
same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable
from torch.distributions import Categorical

gamma = 0.99
eps = np.finfo(np.float32).eps.item()


class Policy(nn.Module):
    def __init__(self, n_states=6, n_actions=3, hidden=24):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(n_states, hidden)
        self.affine2 = nn.Linear(hidden, n_actions)

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return self.affine2(x)


def make_episodes(rng, n_episodes, length, n_states=6, n_actions=3):
    episodes = []
    for _ in range(n_episodes):
        states = rng.randn(length, n_states)  # float64, as numpy gives them
        actions = rng.randint(0, n_actions, size=length)
        rewards = (actions == (states[:, 0] > 0)).astype(np.float64) + 0.1 * rng.randn(length)
        episodes.append((states, actions, rewards.tolist()))
    return episodes


def discounted_returns(rewards):
    R = 0
    returns = []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.FloatTensor(returns)
    return (returns - returns.mean()) / (returns.std() + eps)


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    policy = Policy()
    for p in policy.parameters():
        p.data = torch.from_numpy(rng.uniform(-0.3, 0.3, size=p.size())).type(torch.FloatTensor)
    optimizer = optim.RMSprop(policy.parameters(), lr=3e-3, alpha=0.99, eps=1e-5)
    dataset = make_episodes(rng, 3 * steps, 8)

    losses = []
    for i_step in range(steps):
        policy_loss, entropies = [], []
        for states, actions, rewards in dataset[3 * i_step : 3 * i_step + 3]:
            state = Variable(torch.from_numpy(states).type(torch.FloatTensor))
            action = Variable(torch.LongTensor(actions.tolist()))
            R = Variable(discounted_returns(rewards), requires_grad=False)
            m = Categorical(logits=policy(state))
            policy_loss.append(-m.log_prob(action) * R)
            entropies.append(m.entropy())
        policy_loss = torch.cat(policy_loss).sum()
        entropy = torch.cat(entropies).mean()
        loss = policy_loss - 0.01 * entropy

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        losses.append(entropy.view(1).data[0].item())

    probs = F.softmax(policy(Variable(torch.FloatTensor(dataset[0][0]))), dim=1)
    losses.append(float(probs.data[0][1]))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
