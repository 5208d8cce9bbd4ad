import torch
import torch.nn as nn

torch.manual_seed(0)
bn = nn.BatchNorm1d(2)
# four samples, two features each
x = torch.randn(4, 2)
x.requires_grad_()
out = bn(x)
# the loss of sample 0 alone
loss = out[0].sum()
loss.backward()
print(x.grad)
