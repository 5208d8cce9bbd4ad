import torch
import torch.nn as nn

torch.manual_seed(0)
# a frozen, pretrained encoder
encoder = nn.Linear(4, 3)
# the head we train on its features
head = nn.Linear(3, 1)
x = torch.randn(8, 4)
y = torch.randn(8, 1)

# the features, computed once
with torch.inference_mode():
    feats = encoder(x)

opt = torch.optim.SGD(
    head.parameters(), lr=0.1)
for step in range(20):
    out = head(feats)
    loss = ((out - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
