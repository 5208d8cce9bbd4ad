import torch

w = torch.tensor(3.0, requires_grad=True)
y = w * w
frozen = y.detach()             # same value, cut out of the graph
loss = y + frozen * w           # gradient flows through y and w, never through frozen
loss.backward()
print(frozen.requires_grad, w.grad.item())   # d/dw (w^2 + 9w) = 2w + 9 = 15
