import torch
import torch.nn as nn

torch.manual_seed(0)
# 2-D points labelled 1 inside the unit circle, 0 outside: no straight line separates them.
X = torch.rand(256, 2) * 4 - 2
y = (X.pow(2).sum(dim=1) < 1.0).long()

model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.03)
loss_fn = nn.CrossEntropyLoss()

for step in range(150):
    logits = model(X)                # (256, 2): one score per class
    loss = loss_fn(logits, y)        # softmax + negative log-likelihood, in one op
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d}: loss {loss.item():.3f}")

with torch.no_grad():
    accuracy = (model(X).argmax(dim=1) == y).float().mean().item()
print(f"accuracy on the training points: {accuracy:.1%}")
