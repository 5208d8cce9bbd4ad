import torch
import torch.nn as nn
import torch.nn.functional as F

import gradwalk

torch.manual_seed(0)
# y = x + 0.5, with one bad label
X = torch.linspace(-1, 1, 64)
X = X.reshape(64, 1)
y = X + 0.5
y[45] = 30.0
model = nn.Linear(1, 1)
params = list(model.parameters())
opt = torch.optim.SGD(params, lr=0.1)
clip = nn.utils.clip_grad_norm_

# 80 steps over 8 batches of 8
for step in range(80):
    i = step * 8 % 64
    xb, yb = X[i:i + 8], y[i:i + 8]
    loss = F.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    # scale the gradient to norm <= 1
    norm = clip(params, 1.0)
    opt.step()
    gradwalk.log("unclipped", norm)

print(f"w {model.weight.item():.3f}")
print(f"b {model.bias.item():.3f}")
