"""A GRU encoder-decoder with attention as the PyTorch "translation with a sequence to sequence
network" tutorial writes it: one pair at a time, the encoder stepped token by token into a
preallocated ``encoder_outputs`` tensor, an attention decoder (``torch.cat``, ``torch.bmm``,
``F.log_softmax``), teacher forcing chosen per pair (by a numpy RandomState instead of
``random.random()``, the same in both runs), greedy decoding with ``topk(1)`` and
``.squeeze().detach()``, an early stop on EOS, NLLLoss and two SGD optimizers. The toy task
reverses a digit string. Plain PyTorch: run it with ``python`` or with ``python -m
fjax.mock_torch``; both must print the same losses."""

import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

SOS_token, EOS_token = 0, 1
MAX_LENGTH = 7
N_WORDS = 10  # SOS, EOS and eight "digits"


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        output, hidden = self.gru(embedded, hidden)
        return output, hidden

    def initHidden(self, device):
        return torch.zeros(1, 1, self.hidden_size, device=device)


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.0, max_length=MAX_LENGTH):
        super(AttnDecoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


def init_from_numpy(module, rng):
    for p in module.parameters():
        p.data.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, size=tuple(p.shape)).astype(np.float32)))


def tensorFromSequence(seq, device):
    indexes = list(seq) + [EOS_token]
    return torch.tensor(indexes, dtype=torch.long, device=device).view(-1, 1)


def train(
    input_tensor,
    target_tensor,
    encoder,
    decoder,
    encoder_optimizer,
    decoder_optimizer,
    criterion,
    use_teacher_forcing,
    device,
    max_length=MAX_LENGTH,
):
    encoder_hidden = encoder.initHidden(device)
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()

    input_length = input_tensor.size(0)
    target_length = target_tensor.size(0)
    encoder_outputs = torch.zeros(max_length, encoder.hidden_size, device=device)
    loss = 0

    for ei in range(input_length):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]

    decoder_input = torch.tensor([[SOS_token]], device=device)
    decoder_hidden = encoder_hidden

    if use_teacher_forcing:
        # Teacher forcing: Feed the target as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_tensor[di])
            decoder_input = target_tensor[di]  # Teacher forcing
    else:
        # Without teacher forcing: use its own predictions as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze().detach()  # detach from history as input
            loss += criterion(decoder_output, target_tensor[di])
            if decoder_input.item() == EOS_token:
                break

    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_length


def evaluate(encoder, decoder, seq, device, max_length=MAX_LENGTH):
    with torch.no_grad():
        input_tensor = tensorFromSequence(seq, device)
        encoder_hidden = encoder.initHidden(device)
        encoder_outputs = torch.zeros(max_length, encoder.hidden_size, device=device)
        for ei in range(input_tensor.size()[0]):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] += encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]], device=device)
        decoder_hidden = encoder_hidden
        decoded, attentions = [], torch.zeros(max_length, max_length)
        for di in range(max_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            attentions[di] = decoder_attention.data
            topv, topi = decoder_output.data.topk(1)
            decoded.append(topi.item())
            if topi.item() == EOS_token:
                break
            decoder_input = topi.squeeze().detach()
        return decoded, attentions[: di + 1]


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    hidden_size = 16
    teacher_forcing_ratio = 0.5
    pairs = []
    for _ in range(steps):
        seq = rng.randint(2, N_WORDS, size=rng.randint(3, MAX_LENGTH - 1)).tolist()
        pairs.append((seq, seq[::-1]))
    forcing = rng.rand(steps) < teacher_forcing_ratio

    encoder = EncoderRNN(N_WORDS, hidden_size).to(device)
    decoder = AttnDecoderRNN(hidden_size, N_WORDS).to(device)
    init_from_numpy(encoder, rng)
    init_from_numpy(decoder, rng)
    encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.05)
    decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.05)
    criterion = nn.NLLLoss()

    losses = []
    for it in range(steps):
        source, target = pairs[it]
        input_tensor = tensorFromSequence(source, device)
        target_tensor = tensorFromSequence(target, device)
        loss = train(
            input_tensor,
            target_tensor,
            encoder,
            decoder,
            encoder_optimizer,
            decoder_optimizer,
            criterion,
            bool(forcing[it]),
            device,
        )
        losses.append(loss)

    decoded, attentions = evaluate(encoder, decoder, pairs[0][0], device)
    losses += [float(len(decoded)), attentions.sum(dim=1).mean().item(), attentions.max().item()]
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
