import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(1024, 20)
y = (X[:, 0] > 0).long()  # class 1 where the first feature is positive

# the textbook deep MLP: 10 Linear layers, fc1 to fc10, a sigmoid after each but the last
model = nn.Sequential()
for i in range(1, 10):
    model.add_module(f"fc{i}", nn.Linear(20 if i == 1 else 64, 64))
    model.add_module(f"sigmoid{i}", nn.Sigmoid())
model.add_module("fc10", nn.Linear(64, 2))

opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(30):
    batch = torch.randint(0, 1024, (64,))  # a random mini-batch of 64
    loss = F.cross_entropy(model(X[batch]), y[batch])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
