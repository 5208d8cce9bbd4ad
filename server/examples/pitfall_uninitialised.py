import torch
import torch.nn as nn


class MyLinear(nn.Module):
    """A linear layer written by hand, after an old tutorial."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n_out, n_in))  # sizes, not values
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return x @ self.weight.t() + self.bias


torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3  # a line to fit
layer = MyLinear(3, 1)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
for step in range(20):
    loss = ((layer(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("weight", tuple(layer.weight.shape), "trained for", step + 1, "steps")
