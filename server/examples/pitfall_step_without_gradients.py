import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.tensor([[1.0], [1.5], [2.0], [2.5], [3.0], [3.5], [4.0], [4.5]])
y = 3 * X + 2

model = nn.Linear(1, 1)
lossfn = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for epoch in range(50):
    loss = lossfn(model(X), y)
    loss.backward()
    opt.zero_grad()          # clears the gradients backward() just computed...
    opt.step()               # ...so step() finds none and changes nothing

print(loss.item())
