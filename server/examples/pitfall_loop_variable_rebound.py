import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.tensor([[1.0], [1.5], [2.0], [2.5], [3.0], [3.5], [4.0], [4.5]])
y = 3 * X + 2

model = nn.Linear(1, 1)
lr = 0.05

for epoch in range(50):
    loss = ((model(X) - y) ** 2).mean()
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p = p - lr * p.grad      # binds a new tensor to p; the parameter stays as it was

print(loss.item())
