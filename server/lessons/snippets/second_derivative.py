import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
# create_graph=True: backward records what it computes, so dy_dx has a graph of its own
(dy_dx,) = torch.autograd.grad(y, x, create_graph=True)   # 3x² = 27
(d2y_dx2,) = torch.autograd.grad(dy_dx, x)                # 6x = 18
print(dy_dx.item(), d2y_dx2.item())
