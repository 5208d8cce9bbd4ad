import torch

torch.manual_seed(0)
# 8 layers' weights, fixed: only x
# needs a gradient
ws = [torch.randn(4, 4)
      for _ in range(8)]
x = torch.randn(1, 4,
                requires_grad=True)

h = x
for w in ws:
    # the skip: h + the layer's part
    h = h + torch.sigmoid(h @ w)
h.sum().backward()
print(x.grad)
print(x.grad.norm())
