import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
# rent = 3 * size + 2, exactly
X = torch.linspace(1.0, 4.5, 8)
X = X.reshape(8, 1)
y = 3 * X + 2
model = nn.Linear(1, 1)
# step: lr * m_hat / (sqrt(v_hat) + eps): m, v bias-corrected
opt = torch.optim.Adam(
    model.parameters(), lr=0.1)

for step in range(100):
    loss = F.mse_loss(model(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

print(f"loss {loss.item():.4f}")
print(f"w {model.weight.item():.3f}")
print(f"b {model.bias.item():.3f}")
