import torch

a = torch.tensor(2.0, requires_grad=True)
b = torch.tensor(3.0, requires_grad=True)

# torch.tensor copies the values of a * b and a + b: v has no history
v = torch.tensor([a * b, a + b])
loss = (v ** 2).sum() + a  # the "+ a" is the only path back that is left
loss.backward()

print(loss.item())  # 63.0: the loss is right
print(a.grad, b.grad)  # the gradients are not: torch.stack gives 47 and 34
