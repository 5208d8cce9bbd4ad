import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * 3              # not a leaf: its .grad is not kept...
h.retain_grad()        # ...unless asked for
loss = (h ** 2).sum()
loss.backward()
print(x.is_leaf, h.is_leaf, h.grad, x.grad)
