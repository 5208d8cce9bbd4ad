import torch

# x is a leaf: you made it
x = torch.tensor([1.0, 2.0], requires_grad=True)
# h is not a leaf: x * 3 made it
h = x * 3
loss = (h ** 2).sum()
loss.backward()
print("x.grad:", x.grad)
print("h.grad:", h.grad)  # None
