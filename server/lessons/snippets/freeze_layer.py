import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)
)
# freeze the first layer, as fine-tuning does
for p in model[0].parameters():
    p.requires_grad_(False)

x = torch.randn(5, 3)
loss = model(x).pow(2).mean()
loss.backward()
print(model[0].weight.grad)  # None
print(model[2].weight.grad)
