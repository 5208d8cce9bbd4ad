import torch

x = torch.tensor(1.5, requires_grad=True)
y = torch.sin(x) * x
(dy_dx,) = torch.autograd.grad(y, x)   # returns the gradient; x.grad stays None
print(dy_dx.item(), x.grad)
