import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(8, 3)
y = torch.randn(8, 1)
model = nn.Linear(3, 1)

# one batch of 8
F.mse_loss(model(X), y).backward()
whole = model.weight.grad.clone()

# 4 batches of 2, their gradients summed
model.zero_grad()
for i in range(0, 8, 2):
    Xb, yb = X[i:i + 2], y[i:i + 2]
    loss = F.mse_loss(model(Xb), yb)
    (loss / 4).backward()  # mean of means
print(torch.allclose(model.weight.grad, whole))
