"""A two-layer graph convolutional network as the pygcn reference code writes it: a normalised
adjacency D^-1/2 (A + I) D^-1/2 built in numpy and turned into ``torch.sparse_coo_tensor``
(``sparse_mx_to_torch_sparse_tensor``), a GraphConvolution layer with its own ``Parameter``s and
``reset_parameters``, ``torch.mm`` then ``torch.spmm`` (and ``torch.sparse.mm`` in the second
layer), ``F.log_softmax`` + ``F.nll_loss`` over a training index, Adam with weight decay and an
``accuracy`` helper. Plain PyTorch: run it with ``python`` or with ``python -m
fjax.mock_torch``; both must print the same losses."""

import argparse
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True, sparse_mm=torch.spmm):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.sparse_mm = sparse_mm
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = self.sparse_mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass, sparse_mm=torch.sparse.mm)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def normalized_adjacency(rng, n_nodes, n_edges):
    src, dst = rng.randint(0, n_nodes, size=(2, n_edges))
    adj = np.zeros((n_nodes, n_nodes), np.float32)
    adj[src, dst] = 1
    adj = np.maximum(adj, adj.T) + np.eye(n_nodes, dtype=np.float32)
    d_inv_sqrt = 1.0 / np.sqrt(adj.sum(1))
    return adj * d_inv_sqrt[:, None] * d_inv_sqrt[None, :]


def sparse_mx_to_torch_sparse_tensor(dense):
    """A numpy matrix to a torch sparse COO tensor."""
    row, col = np.nonzero(dense)
    indices = torch.from_numpy(np.vstack((row, col)).astype(np.int64))
    values = torch.from_numpy(dense[row, col])
    shape = torch.Size(dense.shape)
    return torch.sparse_coo_tensor(indices, values, shape)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def main(steps=10, seed=0):
    rng = np.random.RandomState(seed)
    n_nodes, n_feat, n_hid, n_class = 40, 12, 16, 3
    labels_np = rng.randint(0, n_class, size=n_nodes)
    features_np = rng.randn(n_nodes, n_feat).astype(np.float32) + np.eye(n_class, n_feat, dtype=np.float32)[labels_np]

    adj = sparse_mx_to_torch_sparse_tensor(normalized_adjacency(rng, n_nodes, 80))
    features = torch.FloatTensor(features_np)
    labels = torch.LongTensor(labels_np)
    idx_train = torch.LongTensor(range(20))
    idx_val = torch.LongTensor(range(20, 40))

    model = GCN(nfeat=n_feat, nhid=n_hid, nclass=n_class, dropout=0.0)
    for p in model.parameters():  # replaces the random reset_parameters for a shared start
        p.data.copy_(torch.from_numpy(rng.uniform(-0.25, 0.25, size=tuple(p.shape)).astype(np.float32)))
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    losses = []
    for _epoch in range(steps):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        losses += [loss_train.item(), acc_train.item()]

    model.eval()
    output = model(features, adj)
    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    losses += [loss_val.item(), acc_val.item()]
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(main(args.steps, args.seed)))
