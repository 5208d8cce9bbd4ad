import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.Linear(3, 2)
# 1 sample of 3 features
x = torch.tensor([[1.0, 2.0, 3.0]])

out = layer(x)
# each output's gradient: 1 and -2
g = torch.tensor([1.0, -2.0])
loss = (out * g).sum()
loss.backward()
# row i of the gradient: g[i] * x
print(layer.weight.grad)
print(layer.bias.grad)
