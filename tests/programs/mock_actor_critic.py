"""Synchronous advantage actor-critic (A2C) as the pytorch-a2c-ppo style code writes it: a batch
of tiny deterministic environments stepped in numpy (a chain walk with a goal at the right end),
a shared MLP trunk with policy and value heads, ``torch.distributions.Categorical`` for
``log_prob``/``entropy``, n-step rollouts stored in preallocated tensors, discounted returns
bootstrapped from the critic under ``torch.no_grad`` and cut by ``masks``, advantages, value loss
and entropy bonus, RMSprop with ``clip_grad_norm_``, and a greedy evaluation by ``argmax``. The
policy samples by the Gumbel-max trick with the Gumbel noise drawn from numpy, so both runs act
the same. Plain PyTorch: run it with ``python`` or with ``python -m fjax.mock_torch``; both must
print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


def get_parser():
    parser = argparse.ArgumentParser(description="A2C on a chain walk")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-steps", type=int, default=5)
    parser.add_argument("--chain-length", type=int, default=6)
    parser.add_argument("--gamma", type=float, default=0.9)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--value-loss-coef", type=float, default=0.5)
    parser.add_argument("--entropy-coef", type=float, default=0.01)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser


class ChainEnv:
    """A batch of chain walks: actions left / stay / right, +1 and a reset at the right end, a
    small cost per step, and a time limit."""

    def __init__(self, num_envs, length, max_steps=12):
        self.num_envs, self.length, self.max_steps = num_envs, length, max_steps
        self.n_actions = 3
        self.obs_dim = length + 1

    def _obs(self):
        obs = np.zeros((self.num_envs, self.obs_dim), np.float32)
        obs[np.arange(self.num_envs), self.pos] = 1.0
        obs[:, -1] = self.t / self.max_steps
        return obs

    def reset(self):
        self.pos = np.arange(self.num_envs) % (self.length - 1)
        self.t = np.zeros(self.num_envs)
        return self._obs()

    def step(self, actions):
        self.pos = np.clip(self.pos + actions - 1, 0, self.length - 1)
        self.t += 1
        reached = self.pos == self.length - 1
        reward = np.where(reached, 1.0, -0.05).astype(np.float32)
        done = reached | (self.t >= self.max_steps)
        self.pos[done] = 0
        self.t[done] = 0
        return self._obs(), reward, done


class ActorCritic(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_size=32):
        super(ActorCritic, self).__init__()
        self.base = nn.Sequential(
            nn.Linear(num_inputs, hidden_size), nn.Tanh(), nn.Linear(hidden_size, hidden_size), nn.Tanh()
        )
        self.actor = nn.Linear(hidden_size, num_actions)
        self.critic_linear = nn.Linear(hidden_size, 1)

    def forward(self, inputs):
        hidden = self.base(inputs)
        return self.critic_linear(hidden), self.actor(hidden)

    def act(self, inputs, gumbel, deterministic=False):
        value, logits = self(inputs)
        dist = Categorical(logits=logits)
        if deterministic:
            action = dist.probs.argmax(dim=-1)
        else:
            action = (logits + gumbel).argmax(dim=-1)  # a sample of dist, with the noise supplied
        return value, action, dist.log_prob(action)

    def evaluate_actions(self, inputs, action):
        value, logits = self(inputs)
        dist = Categorical(logits=logits)
        return value, dist.log_prob(action), dist.entropy().mean()


def main(steps=10, seed=0, argv=()):
    args = get_parser().parse_args(["--steps", str(steps), "--seed", str(seed), *argv])
    rng = np.random.RandomState(args.seed)
    envs = ChainEnv(args.num_envs, args.chain_length)
    actor_critic = ActorCritic(envs.obs_dim, envs.n_actions)
    for p in actor_critic.parameters():
        bound = 1.0 / np.sqrt(p.shape[-1])
        p.data.copy_(torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))
    optimizer = optim.RMSprop(actor_critic.parameters(), lr=args.lr, eps=1e-5, alpha=0.99)

    n, s = args.num_envs, args.num_steps
    obs = torch.zeros(s + 1, n, envs.obs_dim)
    rewards = torch.zeros(s, n, 1)
    returns = torch.zeros(s + 1, n, 1)
    actions = torch.zeros(s, n, dtype=torch.long)
    masks = torch.ones(s + 1, n, 1)
    obs[0].copy_(torch.from_numpy(envs.reset()))

    losses = []
    for _update in range(args.steps):
        gumbel = torch.from_numpy(rng.gumbel(size=(s, n, envs.n_actions)).astype(np.float32))
        for step in range(s):
            with torch.no_grad():
                _value, action, _log_prob = actor_critic.act(obs[step], gumbel[step])
            ob, reward, done = envs.step(action.numpy())
            obs[step + 1].copy_(torch.from_numpy(ob))
            actions[step].copy_(action)
            rewards[step].copy_(torch.from_numpy(reward).unsqueeze(1))
            masks[step + 1].copy_(torch.FloatTensor([[0.0] if done_ else [1.0] for done_ in done]))

        with torch.no_grad():
            next_value = actor_critic(obs[-1])[0].detach()
        returns[-1] = next_value
        for step in reversed(range(s)):
            returns[step] = returns[step + 1] * args.gamma * masks[step + 1] + rewards[step]

        values, action_log_probs, dist_entropy = actor_critic.evaluate_actions(
            obs[:-1].view(-1, envs.obs_dim), actions.view(-1)
        )
        values = values.view(s, n, 1)
        action_log_probs = action_log_probs.view(s, n, 1)
        advantages = returns[:-1] - values
        value_loss = advantages.pow(2).mean()
        action_loss = -(advantages.detach() * action_log_probs).mean()

        optimizer.zero_grad()
        loss = value_loss * args.value_loss_coef + action_loss - dist_entropy * args.entropy_coef
        loss.backward()
        nn.utils.clip_grad_norm_(actor_critic.parameters(), args.max_grad_norm)
        optimizer.step()

        obs[0].copy_(obs[-1])
        masks[0].copy_(masks[-1])
        losses += [value_loss.item(), dist_entropy.item(), F.smooth_l1_loss(values, returns[:-1], beta=0.05).item()]

    eval_env = ChainEnv(1, args.chain_length)
    ob = eval_env.reset()
    total = 0.0
    for _ in range(eval_env.max_steps):
        with torch.no_grad():
            _value, action, _ = actor_critic.act(torch.from_numpy(ob), None, deterministic=True)
        ob, reward, done = eval_env.step(action.numpy())
        total += float(reward[0])
    losses.append(total)
    return losses


if __name__ == "__main__":
    print(json.dumps(main()))
