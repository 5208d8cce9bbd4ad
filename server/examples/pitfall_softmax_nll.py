import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(256, 2)
y = (X[:, 0] > 0).long() + (X[:, 1] > 0).long()  # three classes

# nn.NLLLoss wants log-probabilities; nn.Softmax gives probabilities
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(60):
    opt.zero_grad()
    loss = nn.NLLLoss()(model(X), y)
    loss.backward()
    opt.step()

with torch.no_grad():
    accuracy = (model(X).argmax(1) == y).float().mean().item()
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}")  # a negative loss
