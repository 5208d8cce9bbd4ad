import torch


def f(x):
    return x ** 3 - 4 * x


x = torch.tensor(2.5, requires_grad=True)
f(x).backward()  # exact: 3x² - 4

# a finite-difference estimate
h = 0.01
with torch.no_grad():
    est = (f(x + h) - f(x - h)) / (2 * h)
print(x.grad.item(), est.item())
