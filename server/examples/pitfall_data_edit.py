import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
# two noisy blobs, one per class
X = torch.cat([torch.randn(64, 2) + 2, torch.randn(64, 2) - 2])
y = torch.cat([torch.zeros(64), torch.ones(64)]).long()

model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(50):
    logits = model(X)
    # keep every weight in [-0.2, 0.2] (a max-norm constraint)
    for p in model.parameters():
        p.data.clamp_(-0.2, 0.2)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()

with torch.no_grad():
    accuracy = (model(X).argmax(1) == y).float().mean().item()
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}")
