import torch

x = torch.arange(1.0, 4.0, requires_grad=True)
y = x ** 2  # a vector: [1, 4, 9]

# y.backward() alone fails: only a scalar
# has an obvious gradient to start from.
# So say how much each element of y counts:
v = torch.tensor([1.0, 0.1, 0.01])
y.backward(v)  # as (v * y).sum().backward()
print(x.grad)  # v * 2x = [2, 0.4, 0.06]
