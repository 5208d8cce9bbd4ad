import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
# 200 points on a 100 x 100 canvas, in pixels: never centred or scaled
X = torch.rand(200, 2) * 100
y = ((X - 50).norm(dim=1) < 40).long()  # 1 inside the circle


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        h = F.relu(self.fc1(x))  # 16 hidden units
        return self.fc2(h)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.5)
for step in range(60):
    loss = F.cross_entropy(net(X), y)
    opt.zero_grad()
    loss.backward()
    opt.step()

with torch.no_grad():
    accuracy = (net(X).argmax(1) == y).float().mean().item()
print(f"loss {loss.item():.3f}, accuracy {accuracy:.2f}")
