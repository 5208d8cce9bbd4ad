import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(200, 2)
y = (X[:, 0] * X[:, 1] > 0).float().unsqueeze(1)  # 1 in two opposite quadrants

# the model already ends in nn.Sigmoid: its outputs are probabilities
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt = torch.optim.Adam(model.parameters(), lr=0.05)
loss_fn = nn.BCELoss()
for step in range(100):
    opt.zero_grad()
    prob = torch.sigmoid(model(X))  # a second sigmoid
    loss = loss_fn(prob, y)
    loss.backward()
    opt.step()

with torch.no_grad():
    accuracy = ((model(X) > 0.5) == y.bool()).float().mean().item()
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}")
